// Package tools holds the diagnosis tools (docs/architecture.md, "Diagnosis
// tools"). Each reads an event DB (package eventdb) and nothing else:
// lockstat and deadlock rebuild lock operations from probe events (package
// lockops), profile aggregates samples; report renders their tables for
// terminals and JSON.
package tools
