package dynamostore

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// NewLocalClient returns a client for DynamoDB Local (or another emulator)
// at endpoint, for tests and local setups: static dummy credentials, any
// region, and no response checksum validation, because DynamoDB Local sends
// no CRC32 header on error replies and the SDK would warn on every one.
// optFns adjust the options further (tests wrap the HTTP client).
func NewLocalClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:                          "us-east-1",
		BaseEndpoint:                    aws.String(endpoint),
		Credentials:                     credentials.NewStaticCredentialsProvider("local", "local", ""),
		DisableValidateResponseChecksum: true,
	}, optFns...)
}
