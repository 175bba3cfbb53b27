'use strict'
// Starts a ready collector (rtcp, syslog) on an ephemeral port with its
// own database on the test server, and a client to read that database.
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('./mongo')
const { tempBufferDir } = require('./buffer-dir')

// `instances` (default 2), `logger` (a recording one, test/helpers/capture-logger.js)
// and `workerOptions` (code-only worker settings) when given.
async function startTestCollector (t, collectorModule, argv = [], { instances = 2, logger, workerOptions } = {}) {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('collector')
  const config = new collectorModule.Config(['--port', '0', '-i', String(instances), '--database', database, '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t), ...argv]).getConfig()
  const collector = new collectorModule.Collector({ ...config, ...(logger ? { logger } : {}), workerOptions: { ...workerOptions, mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  return { collector, db: client.db(database), port: collector.address().port }
}

module.exports = { startTestCollector }
