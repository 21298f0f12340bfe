// Package catalog keeps MCP tool catalogs as data: it decodes and paginates
// list results without re-encoding what servers sent, parses tools, applies
// enabled/disabled filters, assigns qualified names, computes the discovery
// scope of a server, stores catalogs in an on-disk cache, shares one
// in-flight listing among overlapping startups of one scope, and estimates
// the tokens a tool definition costs a model. Subpackage search ranks the
// tools of a catalog for a query.
//
// The package does no process or network work of its own: callers pass in
// the functions that talk to servers.
package catalog
