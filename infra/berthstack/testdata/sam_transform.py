#!/usr/bin/env python3
"""Transform a SAM template into plain CloudFormation JSON on stdout, offline.

    sam_transform.py TEMPLATE

It uses the aws-sam-translator installed beside cfn-lint, the way `sam deploy` would run the
transform in CloudFormation, with what needs an AWS account replaced: local code paths become
s3:// locations (as `sam package` would write), the region comes from AWS_DEFAULT_REGION, and
managed policies are not looked up (the template names them by ARN).
"""

import json
import os
import sys

from cfnlint.decode import cfn_yaml
from samtranslator.translator.transform import transform

LOCAL_PATHS = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
    "AWS::Serverless::HttpApi": "DefinitionUri",
    "AWS::Serverless::Api": "DefinitionUri",
}


class NoManagedPolicies:
    """A managed-policy loader that knows no names: the template uses ARNs."""

    def load(self):
        return {}


def packaged(path):
    """The s3:// location `sam package` would upload a local path to."""
    return "s3://berth-sam-artifacts/" + path.strip("./").replace("/", "-")


def package_locally(doc):
    func_globals = doc.get("Globals", {}).get("Function", {})
    if isinstance(func_globals.get("CodeUri"), str):
        func_globals["CodeUri"] = packaged(func_globals["CodeUri"])
    for res in doc.get("Resources", {}).values():
        key = LOCAL_PATHS.get(res.get("Type"))
        props = res.get("Properties")
        if key and isinstance(props, dict) and isinstance(props.get(key), str) and not props[key].startswith("s3://"):
            props[key] = packaged(props[key])


def plain(value):
    """cfn-lint's YAML nodes (str/dict subclasses) as plain JSON values."""
    return json.loads(json.dumps(value, default=str))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: sam_transform.py TEMPLATE")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    doc = plain(cfn_yaml.load(sys.argv[1]))
    package_locally(doc)
    out = transform(doc, {}, NoManagedPolicies())
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
