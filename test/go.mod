module github.com/kubeinformers/informers/test

go 1.26.0

require github.com/kubeinformers/informers v0.0.0

replace github.com/kubeinformers/informers => ../
