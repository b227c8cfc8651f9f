module github.com/fibergen/fibergen

go 1.26

require github.com/dave/jennifer v1.7.1 // indirect
