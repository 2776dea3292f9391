module example.com/apis

go 1.26.0
