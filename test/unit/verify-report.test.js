'use strict'

// collector verify's text report: stored values come from sample captures,
// text a sender wrote; a difference naming one never writes its control
// bytes to the operator's terminal.
const test = require('node:test')
const assert = require('node:assert/strict')
const { formatReport } = require('../../app/verify/report')

test('a difference naming a stored value is escaped for the terminal', () => {
  const hostile = 'host\u001b]0;owned\u0007\u001b[2J'
  const report = {
    collector: 'syslog',
    samples: { messages: 1, files: [{ file: 'x.pcap', format: 'pcap' }] },
    run: { database: 'verify_x', instances: 2, workerKills: 0, workerKillsWhileSending: 0, masterKills: 0, heldAtMasterKill: 0 },
    counters: { received: 1, replayed: 0, processed: 1, failed: 0, dropped: {}, deadLettered: 0 },
    sinks: [{ collection: 'counters', kind: 'counters', verdict: 'mismatch', summary: { metrics: 1, counted: { stored: 2, expected: 1 } }, differences: [{ what: 'not expected', metric: `syslog.${hostile}.err` }], differenceCount: 1, notCompared: [] }],
    kept: null,
    counts: { verdict: 'exact', rows: [], problems: [] },
    doubts: [],
    verdict: 'mismatch',
    failing: ['counters'],
    logs: [],
    timings: { totalMs: 1000 }
  }
  const text = formatReport(report)
  const controls = [...text].filter((c) => c !== '\n' && (c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
  assert.deepEqual(controls, [], 'no control byte but the newlines')
  assert.match(text, /not expected: metric syslog\.host.*owned.*\.err/)
})
