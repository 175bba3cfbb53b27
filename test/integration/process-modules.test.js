'use strict'

// Each process of a running collector loads only its own code: a worker
// none of the master's (lib/master/), the CLI's (app/, bin/), the argv
// engine's (configs/) or the master's collector classes; the master neither
// mongoose nor the MongoDB driver nor a worker's stores. Read from inside
// the processes of `collector run <name>` (a probe preloaded into each,
// test/fixtures/module-probe.js), after traffic went through.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempDir } = require('../helpers/temp-dir')
const { runCollector, sendNumbered, countLines, withDatabase, waitFor } = require('../fixtures/foreground-run')

const PROBE = path.join(__dirname, '..', 'fixtures', 'module-probe.js')

// A worker's code is workers/, lib/worker/, lib/shared/, lib/mongo/ and the
// collector's own folder; lib/collector/ only for the definition its module
// makes (define-collector.js, the sink declarations, the settings).
const NOT_IN_A_WORKER = /^(lib\/master|lib\/protocols|configs|app|bin)\/|^lib\/collector\/(mongo-collector|mongo-collector-config|defined-classes)\.js$/
// The master reads the workers' settings declaration (its flags) and the
// retention setting's check from workers/; no other worker code.
const WORKER_FILES_THE_MASTER_READS = ['workers/mongo-settings.js', 'workers/storage/retention.js']
const DRIVERS = ['mongoose', 'mongodb', 'bson']

async function probedRun (t, collector, { flags = [], database }) {
  const { uri } = await getTestMongo()
  const dir = tempDir(t, 'module-probe-') // the probes write there every 200 ms until the collector is killed
  const env = { MONGODB_URI: withDatabase(uri, database), MODULE_PROBE_DIR: dir, NODE_OPTIONS: `${process.env.NODE_OPTIONS || ''} --require ${PROBE}` }
  const run = await runCollector(t, collector, { flags: ['-i', '2', ...flags], env })
  const read = () => fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')))
  return { run, uri, read }
}

// What the three processes loaded by now: a probe writes every 200 ms, so
// after 500 ms each has written what the traffic so far made it load.
async function processesNow (read) {
  await new Promise((resolve) => setTimeout(resolve, 500))
  return waitFor(() => { const found = read(); return found.length === 3 && found }, { what: 'a probe from the master and each of two workers' })
}

function check (collector, processes, masterPid) {
  const master = processes.find((p) => p.pid === masterPid)
  const workers = processes.filter((p) => p.pid !== masterPid)
  assert.ok(master, `${collector}: the master's probe`)
  assert.equal(master.role, 'master')
  assert.deepEqual(workers.map((w) => w.role), ['worker', 'worker'])
  for (const worker of workers) {
    assert.deepEqual(worker.files.filter((f) => NOT_IN_A_WORKER.test(f)), [], `${collector}: master, CLI or argv code in a worker`)
    assert.ok(worker.files.includes('workers/definition-worker.js'), `${collector}: the worker runs its definition`)
    assert.ok(worker.packages.includes('mongodb'), `${collector}: the worker writes with the driver`)
  }
  assert.deepEqual(master.packages.filter((p) => DRIVERS.includes(p)), [], `${collector}: a database driver in the master`)
  assert.deepEqual(master.files.filter((f) => f.startsWith('workers/') && !WORKER_FILES_THE_MASTER_READS.includes(f)), [], `${collector}: worker code in the master`)
  return { master, workers }
}

test('syslog with traffic: the workers load no master, CLI or argv code; the master no driver and no worker store', { timeout: 120000 }, async (t) => {
  const database = uniqueDbName('modules')
  const { run, uri, read } = await probedRun(t, 'syslog', { database })
  await sendNumbered(run, 'probe', 300)
  await waitFor(async () => await countLines(uri, database, 'probe') === 300, { what: '300 lines stored' })
  const { master, workers } = check('syslog', await processesNow(read), run.pid)
  t.diagnostic(`files loaded: master ${master.files.length}, workers ${workers.map((w) => w.files.length).join(', ')}; RSS MiB: master ${(master.rss / 1048576).toFixed(1)}, workers ${workers.map((w) => (w.rss / 1048576).toFixed(1)).join(', ')}`)
})

for (const collector of ['rtcp', 'hep', 'statsd', 'netflow']) {
  test(`${collector}: each process loads only its own code`, { timeout: 120000 }, async (t) => {
    const { run, read } = await probedRun(t, collector, { database: uniqueDbName(`modules-${collector}`) })
    const { master, workers } = check(collector, await processesNow(read), run.pid)
    t.diagnostic(`files loaded: master ${master.files.length}, workers ${workers.map((w) => w.files.length).join(', ')}`)
  })
}
