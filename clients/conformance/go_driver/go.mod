module github.com/redis-ratelimit/redis-ratelimit/clients/conformance/go_driver

go 1.25.0

require (
	github.com/redis-ratelimit/redis-ratelimit/clients/go v0.4.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

// The package of this repository's tree (as examples/go takes it).
replace github.com/redis-ratelimit/redis-ratelimit/clients/go => ../../go
