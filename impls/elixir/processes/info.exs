# The manifest's `info` command: one line of the VM settings that shape the figures (the
# defaults the `run` wrapper starts with when no --threads is given).
info = &:erlang.system_info/1

IO.puts(
  "Erlang/OTP #{info.(:otp_release)} erts #{info.(:version)}, " <>
    "schedulers #{info.(:schedulers_online)} online of #{info.(:schedulers)}, " <>
    "dirty CPU schedulers #{info.(:dirty_cpu_schedulers_online)}, " <>
    "dirty I/O schedulers #{info.(:dirty_io_schedulers)}, " <>
    "process limit #{info.(:process_limit)}, JIT #{info.(:emu_flavor) == :jit}"
)
