package berthstack

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/berth-io/berth/internal/store/dynamostore"
)

// Tables holds the store's DynamoDB tables, built from dynamostore.Tables, the definitions the
// store itself creates in tests: keys, indexes, stream and TTL have one source.
type Tables struct {
	constructs.Construct
	// Prefix is the deployment's table name prefix (the functions' BERTH_STORE_TABLE_PREFIX).
	Prefix *string
	byName map[string]awsdynamodb.CfnTable
}

// Table returns the table with the short name (dynamostore.TableInstances, ...).
func (t *Tables) Table(name string) awsdynamodb.CfnTable { return t.byName[name] }

// All returns the tables in dynamostore's order.
func (t *Tables) All() []awsdynamodb.CfnTable {
	var out []awsdynamodb.CfnTable
	for _, def := range dynamostore.Tables("") {
		out = append(out, t.byName[def.Table])
	}
	return out
}

func newTables(scope constructs.Construct, p Props) *Tables {
	t := &Tables{Construct: constructs.NewConstruct(scope, jsii.String("Tables")), Prefix: jsii.String(p.TablePrefix), byName: map[string]awsdynamodb.CfnTable{}}
	for _, def := range dynamostore.Tables(*t.Prefix) {
		in := def.Create
		props := &awsdynamodb.CfnTableProps{
			TableName:   in.TableName,
			BillingMode: jsii.String(string(in.BillingMode)),
			PointInTimeRecoverySpecification: &awsdynamodb.CfnTable_PointInTimeRecoverySpecificationProperty{
				PointInTimeRecoveryEnabled: jsii.Bool(true),
			},
			DeletionProtectionEnabled: jsii.Bool(p.DeletionProtection),
		}
		var attrs []*awsdynamodb.CfnTable_AttributeDefinitionProperty
		for _, a := range in.AttributeDefinitions {
			attrs = append(attrs, &awsdynamodb.CfnTable_AttributeDefinitionProperty{
				AttributeName: a.AttributeName, AttributeType: jsii.String(string(a.AttributeType)),
			})
		}
		props.AttributeDefinitions = attrs
		props.KeySchema = keySchema(in.KeySchema)
		var gsis []*awsdynamodb.CfnTable_GlobalSecondaryIndexProperty
		for _, g := range in.GlobalSecondaryIndexes {
			gsis = append(gsis, &awsdynamodb.CfnTable_GlobalSecondaryIndexProperty{
				IndexName:  g.IndexName,
				KeySchema:  keySchema(g.KeySchema),
				Projection: &awsdynamodb.CfnTable_ProjectionProperty{ProjectionType: jsii.String(string(g.Projection.ProjectionType))},
			})
		}
		if len(gsis) > 0 {
			props.GlobalSecondaryIndexes = gsis
		}
		if s := in.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) {
			props.StreamSpecification = &awsdynamodb.CfnTable_StreamSpecificationProperty{StreamViewType: jsii.String(string(s.StreamViewType))}
		}
		if def.TTLAttribute != "" {
			props.TimeToLiveSpecification = &awsdynamodb.CfnTable_TimeToLiveSpecificationProperty{
				AttributeName: jsii.String(def.TTLAttribute), Enabled: jsii.Bool(true),
			}
		}
		table := awsdynamodb.NewCfnTable(t.Construct, jsii.String(def.Table), props)
		// The tables hold every user's containers and their history: a stack deletion or a
		// replacement keeps them.
		table.ApplyRemovalPolicy(awscdk.RemovalPolicy_RETAIN, nil)
		t.byName[def.Table] = table
	}
	return t
}

func keySchema(in []types.KeySchemaElement) []*awsdynamodb.CfnTable_KeySchemaProperty {
	var out []*awsdynamodb.CfnTable_KeySchemaProperty
	for _, k := range in {
		out = append(out, &awsdynamodb.CfnTable_KeySchemaProperty{AttributeName: k.AttributeName, KeyType: jsii.String(string(k.KeyType))})
	}
	return out
}

// Arns returns the ARNs of the named tables, each followed by its indexes' ARN pattern when
// withIndexes names it.
func (t *Tables) Arns(names []string, withIndexes ...string) []*string {
	var out []*string
	for _, n := range names {
		out = append(out, t.byName[n].AttrArn())
		if slices.Contains(withIndexes, n) {
			out = append(out, jsii.String(*t.byName[n].AttrArn()+"/index/*"))
		}
	}
	return out
}

// IndexArn returns the ARN of one index of the named table.
func (t *Tables) IndexArn(table, index string) *string {
	return jsii.String(*t.byName[table].AttrArn() + "/index/" + index)
}
