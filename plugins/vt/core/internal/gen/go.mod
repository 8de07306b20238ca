module github.com/termhost/termhost/plugins/vt/core/internal/gen

go 1.26.8

require golang.org/x/text v0.43.0
