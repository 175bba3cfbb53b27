'use strict'

// A MongoDB collector not told how many workers (no -i, or -i auto) starts
// half the CPUs' worth when its database runs on this host, as the test
// server does; -i N is N whatever the database.
const test = require('node:test')
const assert = require('node:assert/strict')
const os = require('node:os')
const syslog = require('../../collectors/syslog')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')

async function started (t, argv) {
  const { uri } = await getTestMongo()
  const config = new syslog.Config(['--port', '0', '--database', uniqueDbName('workers'), '--buffer-dir', tempBufferDir(t), ...argv]).getConfig()
  const collector = new syslog.Collector({ ...config, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  return collector
}

test('no -i, or -i auto, with the database on loopback: half the CPUs, at least one; -i 2: two', { timeout: 60000 }, async (t) => {
  const half = Math.max(1, Math.floor(os.availableParallelism() / 2))
  for (const argv of [[], ['-i', 'auto']]) {
    const collector = await started(t, argv)
    const summary = collector.summary()
    assert.equal(summary.instances, half, JSON.stringify(argv))
    assert.equal(collector.pool.rotation.length, half, 'workers forked and in rotation')
    await collector.stop()
  }
  const two = await started(t, ['-i', '2'])
  assert.equal(two.summary().instances, 2)
  assert.equal(two.pool.rotation.length, 2)
})
