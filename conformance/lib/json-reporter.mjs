// A node:test reporter that writes one JSON line per finished test (name,
// nesting, file, pass/fail, duration, error), for report.mjs to tabulate.
export default async function* jsonReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const d = event.data;
    yield JSON.stringify({
      name: d.name,
      nesting: d.nesting,
      file: d.file,
      type: d.details?.type ?? 'test',
      pass: event.type === 'test:pass',
      skipped: Boolean(d.skip || d.todo),
      ms: Math.round(d.details?.duration_ms ?? 0),
      error: event.type === 'test:fail' ? String(d.details?.error?.cause?.message ?? d.details?.error?.message ?? '').slice(0, 500) : undefined,
    }) + '\n';
  }
}
