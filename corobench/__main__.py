from corobench.entrypoint import run

run()
