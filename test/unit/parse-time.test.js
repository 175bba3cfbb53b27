'use strict'

// collector calls' --from/--to and the view's search form (app/commands/common.js
// parseTime): a time without a zone is UTC, one naming its zone keeps it,
// on a host whose zone is neither (New York, and Berlin).

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const CASES = [
  ['2026-11-30 04:18:33', '2026-11-30T04:18:33.000Z'], // as the tables print it
  ['2026-11-30T04:18:33', '2026-11-30T04:18:33.000Z'],
  ['2026-11-30 04:18:33 PM', '2026-11-30T16:18:33.000Z'],
  ['04:18 2026-11-30', '2026-11-30T04:18:00.000Z'],
  ['2026-11-30', '2026-11-30T00:00:00.000Z'],
  ['2026/11/30', '2026-11-30T00:00:00.000Z'],
  ['Nov 30 2026', '2026-11-30T00:00:00.000Z'],
  ['2026-07-01 12:00', '2026-07-01T12:00:00.000Z'], // summer time on the host: its offset then
  ['2026-03-08 02:30:00', '2026-03-08T02:30:00.000Z'], // the hour New York's clock skips
  ['2026-03-29 02:30:00', '2026-03-29T02:30:00.000Z'], // and Berlin's
  ['2026-11-30T04:18:33.250', '2026-11-30T04:18:33.250Z'],
  ['Nov 30 2026 04:18 PM', '2026-11-30T16:18:00.000Z'],
  ['2026-11-30 04:18:33 UTC +01:00', '2026-11-30T03:18:33.000Z'],
  ['2026-11-30 04:18:33 +530', '2026-11-29T22:48:33.000Z'],
  ['2026-11-30T04:18:33Z', '2026-11-30T04:18:33.000Z'],
  ['2026-11-30T05:18:33+01:00', '2026-11-30T04:18:33.000Z'],
  ['2026-11-30 05:18:33 +0100', '2026-11-30T04:18:33.000Z'],
  ['2026-11-29T23:18:33-05:00', '2026-11-30T04:18:33.000Z'],
  ['2026-11-30 04:18:33 UTC', '2026-11-30T04:18:33.000Z'],
  ['Mon Nov 30 2026 05:18:33 GMT+0100 (Central European Standard Time)', '2026-11-30T04:18:33.000Z'],
  ['Sun, 29 Nov 2026 23:18:33 EST', '2026-11-30T04:18:33.000Z'],
  ['1h', null],
  ['1', null], // Date.parse: 2001-01-01
  ['12:00', null],
  ['2026-02-30T00:00Z', null], // Date.parse: March 2
  ['2026-02-29', null],
  ['2028-02-29', '2028-02-29T00:00:00.000Z'],
  ['2026-13-01', null],
  ['Feb 30 2026', null],
  ['30 Feb 2026 10:00 UTC', null],
  ['10:00 Nov 30 2026', '2026-11-30T10:00:00.000Z'], // the minutes are no day
  ['10:31 Nov 30 2026', '2026-11-30T10:31:00.000Z'],
  ['04:18 Feb 30 2026', null],
  ['11/30/2026', '2026-11-30T00:00:00.000Z'],
  ['2/30/2026', null],
  ['02/30/2026 10:00 UTC', null],
  ['2026.2.30', null],
  ['+002026-11-30T00:00:00Z', '2026-11-30T00:00:00.000Z'],
  ['yesterday', null],
  ['', null]
]

for (const zone of ['America/New_York', 'Europe/Berlin']) {
  test(`parseTime on a host in ${zone}: no zone is UTC, a named zone stands`, () => {
    const script = `const { parseTime } = require(${JSON.stringify(path.join(__dirname, '../../app/commands/common'))})
      const cases = ${JSON.stringify(CASES.map(([text]) => text))}
      process.stdout.write(JSON.stringify(cases.map((text) => { const t = parseTime(text); return Number.isNaN(t) ? null : new Date(t).toISOString() })))`
    const run = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, TZ: zone }, encoding: 'utf8' })
    assert.equal(run.status, 0, run.stderr)
    const read = JSON.parse(run.stdout)
    assert.deepEqual(CASES.map(([text], i) => [text, read[i]]), CASES)
  })
}
