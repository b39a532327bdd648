module github.com/gccl/gccl

go 1.26

require (
	github.com/sbromberger/gompi v0.2.0 // indirect
	github.com/stretchr/testify v1.10.0 // indirect
)
