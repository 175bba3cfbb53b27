'use strict'

const path = require('node:path')
const assert = require('node:assert/strict')
const { fork } = require('node:child_process')
const { once } = require('node:events')
const { MongoClient } = require('mongodb')
const { getTestMongo, uniqueDbName } = require('./mongo')

/**
 * The RTCP collector in its own process (test/fixtures/rtcp-master.js), so
 * that a test can stop and continue its master, driven over IPC: `ask(cmd)`
 * → its result. `{ port, child, pid, ask, db }`. At the end it is let go,
 * continued first should the test have left it stopped.
 */
async function startRtcpMaster (t, argv, prefix = 'rtcp') {
  const { uri } = await getTestMongo()
  const database = uniqueDbName(prefix)
  const child = fork(path.join(__dirname, '..', 'fixtures', 'rtcp-master.js'), [JSON.stringify({ uri, database, argv })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: [] })
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGCONT')
    if (child.connected) child.disconnect()
  })
  const [hello] = await once(child, 'message')
  assert.ok(hello.ready, `the collector started: ${hello.error}`)
  let nextId = 0
  const ask = (cmd) => new Promise((resolve, reject) => {
    const id = ++nextId
    const onMessage = (msg) => {
      if (msg.id !== id) return
      child.off('message', onMessage)
      if (msg.error) reject(new Error(msg.error))
      else resolve(msg.result)
    }
    child.on('message', onMessage)
    child.send({ id, cmd })
  })
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  return { port: hello.ready, child, pid: child.pid, ask, db: client.db(database) }
}

module.exports = { startRtcpMaster }
