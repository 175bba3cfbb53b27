'use strict'

// Which server the workers write to, and no schema command on the write
// path: the stream writer looks at the indexes with a read and creates
// them again only when they are missing (a dropped collection).

const { test, after } = require('node:test')
const assert = require('node:assert/strict')
const mongoose = require('mongoose')
const { describeServer, identifyServer, serverLine } = require('../../lib/mongo/server-identity')
const { defineModels, missingIndexes } = require('../../workers/storage/schemas')
const StreamWriter = require('../../workers/storage/stream-writer')
const { StreamsSink } = require('../../workers/streams-sink')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')

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
