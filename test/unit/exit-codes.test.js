'use strict'
// Which exit code a failed start gets (app/exit-codes.js): START_FAILED, which
// PM2 does not restart, only while the process that started the app waits to
// report it; every other start under PM2 is retried.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const EXIT = require('../../app/exit-codes')

const waiter = EXIT.startWaiterEnv().COLLECTOR_START_WAITER

test('a first start under PM2 that the launcher waits for: START_FAILED; a restart after a crash: FAILED; not under PM2: FAILED', () => {
  assert.match(waiter, /^\d+:\d+$/, 'pid and start time (Linux)')
  assert.equal(EXIT.startFailedCode({ pm_id: '0', restart_time: '0', COLLECTOR_START_WAITER: waiter }), EXIT.START_FAILED)
  assert.equal(EXIT.startFailedCode({ pm_id: '0', restart_time: '3', COLLECTOR_START_WAITER: waiter }), EXIT.FAILED)
  assert.equal(EXIT.startFailedCode({ COLLECTOR_START_WAITER: waiter }), EXIT.FAILED)
})

test('a start nobody waits for (pm2 resurrect, pm2 start by hand): FAILED, so PM2 retries it', async () => {
  assert.equal(EXIT.startFailedCode({ pm_id: '0', restart_time: '0' }), EXIT.FAILED, 'no waiter named')
  assert.equal(EXIT.startFailedCode({ pm_id: '0', COLLECTOR_START_WAITER: 'garbage' }), EXIT.FAILED)
  const child = spawn(process.execPath, ['-e', ''])
  const gone = `${child.pid}:1`
  await new Promise((resolve) => child.on('exit', resolve))
  assert.equal(EXIT.startFailedCode({ pm_id: '0', COLLECTOR_START_WAITER: gone }), EXIT.FAILED, 'the launcher that waited has exited')
  const [pid, started] = waiter.split(':')
  assert.equal(EXIT.startFailedCode({ pm_id: '0', COLLECTOR_START_WAITER: `${pid}:${Number(started) + 1}` }), EXIT.FAILED,
    'a saved environment restored after a reboot: its pid now another process, started at another time')
})
