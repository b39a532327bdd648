module github.com/gccl/gccl

go 1.26.0

require (
	github.com/sbromberger/gompi v0.2.0
	github.com/stretchr/testify v1.10.0
	golang.org/x/image v0.47.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
