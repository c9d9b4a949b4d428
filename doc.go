// Package berth holds no code of its own: the module's root, where
// template.yaml (the AWS SAM stack) lives, and template_test.go, which
// checks that template against the code it deploys.
package berth
