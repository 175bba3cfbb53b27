'use strict'

// Which database a MongoDB collector writes: `--database` when given, else
// the one the URI names (MONGODB_URI or --mongo-uri), else `collector`.
// Run as an operator runs it: `collector run syslog`, lines over UDP, SIGINT,
// then the database is read.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const syslog = require('../../collectors/syslog')
const { resolveDatabase, uriDatabase } = require('../../lib/mongo/resolve-mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { runCollector, sendNumbered, countLines, withDatabase, waitFor } = require('../fixtures/foreground-run')
const { freePort } = require('../helpers/ports')
const { removeDir } = require('../helpers/temp-dir')

const LINES = 100
const FLAGS = ['-i', '2', '--flush-interval', '50ms']
let tags = 0

/** Runs the syslog collector, sends LINES lines tagged uniquely, stops it (SIGINT, exit 0); returns the tag. */
async function collectLines (t, { flags = [], env = {} }) {
  const tag = `dbtest${process.pid}x${++tags}`
  const run = await runCollector(t, 'syslog', { flags: [...FLAGS, ...flags], env })
  await sendNumbered(run, tag, LINES)
  run.child.kill('SIGINT')
  const { code, stdout, stderr } = await run.exited
  assert.equal(code, 0, stderr.slice(-2000) + stdout.slice(-2000))
  return tag
}

/** The test server's URI without a database; also removes, after the test, what a test wrote into `collector`. */
async function serverUri (t) {
  const { uri } = await getTestMongo()
  t.after(async () => {
    const client = await new MongoClient(uri).connect()
    try {
      await client.db('collector').collection('syslog').deleteMany({ message: { $regex: `^dbtest${process.pid}x` } })
    } finally {
      await client.close()
    }
  })
  return withDatabase(uri, '')
}

function hasCredentials (uri) {
  return /^mongodb(\+srv)?:\/\/[^/]*@/.test(uri)
}

test('the database is --database if given, else the URI\'s, else collector', () => {
  assert.equal(uriDatabase('mongodb://127.0.0.1:27017/mydb'), 'mydb')
  assert.equal(uriDatabase('mongodb://u:p@h1:1,h2:2/my%20db?replicaSet=r'), 'my db')
  assert.equal(uriDatabase('mongodb+srv://cluster.example.net/prod?retryWrites=true'), 'prod')
  assert.equal(uriDatabase('mongodb://127.0.0.1:27017/?replicaSet=r'), undefined)
  assert.equal(uriDatabase('mongodb://127.0.0.1:27017'), undefined)
  assert.equal(resolveDatabase('other', 'mongodb://h/mydb'), 'other')
  assert.equal(resolveDatabase(undefined, 'mongodb://h/mydb'), undefined, 'the worker takes the URI\'s own')
  assert.equal(resolveDatabase(undefined, 'mongodb://h/'), 'collector')
  assert.equal(resolveDatabase(undefined, 'mongodb://h:1'), 'collector')
})

test('MONGODB_URI naming a database: the lines land there, not in collector', { timeout: 90000 }, async (t) => {
  const uri = await serverUri(t)
  const database = uniqueDbName('urinamed')
  const tag = await collectLines(t, { env: { MONGODB_URI: withDatabase(uri, database) } })
  assert.equal(await countLines(uri, database, tag), LINES)
  assert.equal(await countLines(uri, 'collector', tag), 0)
})

test('--mongo-uri naming a database: the lines land there', { timeout: 90000 }, async (t) => {
  const uri = await serverUri(t)
  if (hasCredentials(uri)) return t.skip('the test server\'s URI holds credentials: --mongo-uri refuses it')
  const database = uniqueDbName('flagurinamed')
  const tag = await collectLines(t, { flags: ['--mongo-uri', withDatabase(uri, database)], env: { MONGODB_URI: '' } })
  assert.equal(await countLines(uri, database, tag), LINES)
  assert.equal(await countLines(uri, 'collector', tag), 0)
})

test('--database overrides the database the URI names', { timeout: 90000 }, async (t) => {
  const uri = await serverUri(t)
  const named = uniqueDbName('ignored')
  const database = uniqueDbName('flagnamed')
  const tag = await collectLines(t, { flags: ['--database', database], env: { MONGODB_URI: withDatabase(uri, named) } })
  assert.equal(await countLines(uri, database, tag), LINES)
  assert.equal(await countLines(uri, named, tag), 0)
})

test('a URI without a database: the lines land in collector', { timeout: 90000 }, async (t) => {
  const uri = await serverUri(t)
  const tag = await collectLines(t, { env: { MONGODB_URI: uri } })
  assert.equal(await countLines(uri, 'collector', tag), LINES)
  assert.equal(await countLines(uri, 'test', tag), 0, 'not the driver\'s default')
})

test('no MongoDB configured: the embedded server is started on disk, the lines land in collector and are still there after the collector (and its server) restarted', { timeout: 120000 }, async (t) => {
  const saved = process.env.MONGODB_URI
  delete process.env.MONGODB_URI
  t.after(() => { if (saved !== undefined) process.env.MONGODB_URI = saved })
  const dbPath = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-embedded-'))
  t.after(() => removeDir(dbPath))
  const mongoPort = await freePort() // where no MongoDB answers: the collector starts its own there
  const config = new syslog.Config(['--port', '0', '--db-path', dbPath, '--buffer-dir', tempBufferDir(t), ...FLAGS]).getConfig()
  const first = new syslog.Collector({ ...config, mongoPort })
  t.after(() => first.stop())
  await first.start()
  const embeddedUri = first.dbServer.uri
  assert.equal(uriDatabase(embeddedUri), undefined, 'the embedded server\'s URI names no database')
  assert.equal(first.dbServer.dbPath, dbPath)
  const tag = `dbtest${process.pid}xembedded`
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const sendLines = async (port, from) => {
    for (let i = from; i < from + LINES; i++) {
      await new Promise((resolve) => socket.send(`<14>1 2026-11-23T10:00:00Z h app - - - ${tag} ${i}`, port, '127.0.0.1', resolve))
    }
  }
  await sendLines(first.address().port, 0)
  await waitFor(() => first.summary().processed === LINES, { what: `${LINES} lines stored`, timeout: 30000 })
  await first.stop() // stops the server it started, which commits its data

  const second = new syslog.Collector({ ...config, mongoPort })
  t.after(() => second.stop())
  await second.start()
  assert.equal(second.dbServer.uri, embeddedUri, 'the same port again')
  assert.equal(await countLines(embeddedUri, 'collector', tag), LINES, 'kept across the restart')
  await sendLines(second.address().port, LINES)
  await waitFor(async () => await countLines(embeddedUri, 'collector', tag) === 2 * LINES, { what: `${2 * LINES} lines in collector`, timeout: 30000 })
})
