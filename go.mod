module github.com/fibergen/fibergen

go 1.26
