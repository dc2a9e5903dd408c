module github.com/sessionwatch/sessionwatch

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/robfig/cron/v3 v3.0.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sys v0.13.0 // indirect
)
