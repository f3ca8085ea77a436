"""A stand-in for botocore in tests: botocore itself is a 13 MB install."""
