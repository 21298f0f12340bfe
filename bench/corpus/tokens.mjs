// Counts the real BPE tokens of strings with js-tiktoken (o200k_base, the
// GPT-4o/o-series encoding, and cl100k_base, GPT-4's), for the calibration
// of the sidecar's token estimate (catalog.EstimateTokens).
//
//   node tokens.mjs IN.json OUT.json
//
// IN is a JSON array of strings; OUT gets [{"o200k": n, "cl100k": n}, ...]
// in the same order. NODE_PATH must reach js-tiktoken (capture.sh sets it).
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(process.env.NODE_PATH + "/");
const { getEncoding } = require("js-tiktoken");
const [input, output] = process.argv.slice(2);
const strings = JSON.parse(readFileSync(input, "utf8"));
const o200k = getEncoding("o200k_base");
const cl100k = getEncoding("cl100k_base");
const counts = strings.map((s) => ({ o200k: o200k.encode(s).length, cl100k: cl100k.encode(s).length }));
writeFileSync(output, JSON.stringify(counts));
