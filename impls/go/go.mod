module corobench/impls/go

go 1.22
