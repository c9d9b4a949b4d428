// A module of its own, outside berth's: the test copies it into a temporary
// directory, generates berthapi/ from docs/openapi.yaml with oapi-codegen and
// builds it, so berth's go.mod never needs the generated code's runtime.
module berth.test/genclient

go 1.26.0

require github.com/oapi-codegen/runtime v1.9.0

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)
