'use strict'

// Which server the workers write to, and no schema command on the write
// path: the stream writer looks at the indexes with a read and creates
// them again only when they are missing (a dropped collection).

const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const mongoose = require('mongoose')
const { MongoClient } = require('mongodb')
const { describeServer, identifyServer, serverLine } = require('../../lib/mongo/server-identity')
const { defineModels, missingIndexes } = require('../../workers/storage/schemas')
const StreamWriter = require('../../workers/storage/stream-writer')
const { StreamsSink } = require('../../workers/streams-sink')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { createWireProxy } = require('../helpers/wire-proxy')
const { captureLogger } = require('../helpers/capture-logger')
const { waitFor } = require('../helpers/wait-for')
const { udpSocket, sendPaced } = require('../helpers/lb')

let connection
after(() => connection && connection.close())

async function connect () {
  const { uri } = await getTestMongo()
  if (!connection) connection = await mongoose.createConnection(uri, { monitorCommands: true }).asPromise()
  return connection
}

// Replies in the shapes the servers send (MongoDB 8.0's buildInfo; FerretDB
// 1.24's, which adds ferretdbVersion, as its handler code does).
const MONGODB_BUILD = { version: '8.0.4', gitVersion: 'bc35ab4305d9920d9d0491c1c9ef9b72383d31f9', modules: [], versionArray: [8, 0, 4, 0], ok: 1 }
const FERRETDB_BUILD = { version: '7.0.77', gitVersion: '4b3b9a4e8a1f1c5bd2d8e7b5c0e0e3d0c1a2b3c4', modules: [], ferretdbVersion: 'v1.24.0', ok: 1 }

test('a server is named from what it says and where it is', () => {
  assert.deepEqual(describeServer(MONGODB_BUILD, { setName: 'rs0', isWritablePrimary: true }, ['db1.example.com']),
    { kind: 'mongodb', name: 'MongoDB', version: '8.0.4', topology: 'replica set rs0', risk: null })
  assert.equal(describeServer({ ...MONGODB_BUILD, modules: ['enterprise'] }, { msg: 'isdbgrid' }).name, 'MongoDB Enterprise')
  assert.equal(describeServer(MONGODB_BUILD, { msg: 'isdbgrid' }).topology, 'sharded (mongos)')
  const ferret = describeServer(FERRETDB_BUILD, { isWritablePrimary: true })
  assert.deepEqual([ferret.kind, ferret.version, ferret.topology], ['ferretdb', 'v1.24.0', 'standalone'])
  assert.match(ferret.risk, /not atomic/)
  assert.equal(describeServer(MONGODB_BUILD, {}, ['acct.mongo.cosmos.azure.com']).kind, 'cosmosdb')
  assert.equal(describeServer(MONGODB_BUILD, {}, ['c1.cluster-x.eu-west-1.docdb.amazonaws.com']).kind, 'documentdb')
  assert.equal(serverLine(describeServer({}, {})), 'MongoDB-compatible server reporting MongoDB unknown, standalone')
})

test('the embedded server is identified over the wire as a compatible server, not as MongoDB', async () => {
  const conn = await connect()
  const server = await identifyServer(conn.db, ['127.0.0.1'])
  assert.equal(server.kind, 'compatible', JSON.stringify(server))
  assert.equal(server.risk, null)
  assert.match(serverLine(server), /^MongoDB-compatible server reporting MongoDB \d+\.\d+\.\d+, standalone$/)
})

test('the stream writer checks indexes with a read; createIndexes only when the collection lost them', async () => {
  const conn = (await connect()).useDb(uniqueDbName('idx'), { useCache: false })
  const { Stream } = await defineModels(conn)
  assert.deepEqual(await missingIndexes(Stream), [])
  const commands = []
  const client = conn.getClient()
  const record = (event) => { if (event.databaseName === conn.name) commands.push(event.commandName) }
  client.on('commandStarted', record)
  try {
    const warnings = []
    const worker = { logger: { warn: (fields, msg) => warnings.push({ fields, msg }) } }
    const writer = new StreamWriter(Stream.collection, { ensureIndexes: () => StreamsSink.prototype.restoreIndexes.call({ host: worker }, Stream) })
    writer.indexesCheckedAt = 0
    await writer.write([])
    assert.deepEqual(commands, ['listIndexes'], 'one read, no schema command, while the indexes are there')
    assert.equal(warnings.length, 0)
    await Stream.collection.drop()
    commands.length = 0
    writer.indexesCheckedAt = 0
    await writer.write([])
    assert.equal(commands[0], 'listIndexes')
    assert.ok(commands.length > 1 && commands.slice(1).every((name) => name === 'createIndexes'), commands.join())
    assert.equal(warnings.length, 1)
    assert.match(warnings[0].msg, /indexes were missing/)
    assert.deepEqual(await missingIndexes(Stream), [], 'all back')
  } finally {
    client.off('commandStarted', record)
  }
})

// MongoDB before 4.4.2 (4.2 is the oldest driver 7 accepts) answers
// isMaster and refuses hello in these words.
const HELLO_REFUSED = { ok: 0, errmsg: "no such command: 'hello'", code: 59, codeName: 'CommandNotFound' }

async function serverRefusingHello (t) {
  const { uri } = await getTestMongo()
  const target = new URL(uri)
  const proxy = await createWireProxy({ targetHost: target.hostname, targetPort: Number(target.port) || 27017, answer: (name) => name === 'hello' ? HELLO_REFUSED : undefined })
  t.after(() => proxy.close())
  return proxy
}

test('a server that refuses hello ("no such command", code 59) is identified by isMaster, over the wire', async (t) => {
  const proxy = await serverRefusingHello(t)
  const client = await new MongoClient(proxy.uri, { directConnection: true, serverSelectionTimeoutMS: 5000 }).connect()
  t.after(() => client.close())
  await assert.rejects(client.db('admin').command({ hello: 1 }), { code: 59 }, 'the stand-in refuses hello as MongoDB 4.2 does')
  const server = await identifyServer(client.db('admin'), ['127.0.0.1'])
  assert.equal(serverLine(server), serverLine(await identifyServer(await connect().then((c) => c.db), ['127.0.0.1'])))
  assert.ok(proxy.answered.get('hello') >= 2, 'hello was asked and refused')
})

test('a collector writing to a server that refuses hello stores its messages (it was retried forever)', { timeout: 60000 }, async (t) => {
  const proxy = await serverRefusingHello(t)
  const syslog = require('../../collectors/syslog')
  const database = uniqueDbName('nohello')
  const { logger, records } = captureLogger()
  const config = new syslog.Config(['--port', '0', '-i', '1', '--database', database, '--flush-interval', '50ms']).getConfig()
  const collector = new syslog.Collector({ ...config, logger, workerOptions: { mongoUri: proxy.uri } })
  t.after(() => collector.stop())
  await collector.start()
  const lines = Array.from({ length: 20 }, (_, i) => Buffer.from(`<13>Nov 27 03:00:00 host app: line ${i}`))
  await sendPaced(collector, await udpSocket(t), lines)
  await waitFor(() => collector.summary().processed === lines.length, { timeout: 30000, what: 'every line stored' })
  assert.ok(records.some((r) => /^database: MongoDB-compatible server/.test(r.msg)), 'the server was named')
})
