// Package storage is agora's object storage: one small Store interface with a
// filesystem backend (file:///dir) and an S3 backend (s3://bucket/prefix), plus
// content-addressed blobs verified by sha256.
//
// Dispatch specs, bundles, logs, large partial_state and workspace snapshots
// all go through it, so the worker and the orchestrator agree on keys and URIs.
//
// What it may import: docs/architecture.md.
package storage
