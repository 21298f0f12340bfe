// Package search ranks the tools of a qualified catalog for a query, so that
// a harness can give a model the few tools a task needs instead of the whole
// catalog.
//
// Queries are free text (BM25F over each tool's name, server, title,
// description and parameter names and descriptions, with light stemming and
// a small synonym table), "/regex/" over names and descriptions, or
// "select:name1,name2" for exact names (qualified, or the servers' own).
//
// An Index is an immutable snapshot: Update returns the index of a new
// catalog and reuses the analysis of every server whose tools did not
// change, so an index can follow a catalog as it changes at the cost of what
// changed. A Shared shares those analyses among the indexes of many
// catalogs (a sidecar's sessions), so a catalog whose tools another index
// analysed already costs nothing to analyse. The package only reads the
// tools it is handed; it never asks for them.
package search
