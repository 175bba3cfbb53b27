'use strict'

// Which server the embedded database runs (issue 43): MONGODB_URI, a server
// of ours on the port, a real mongod (MONGOMS_SYSTEM_BINARY, PATH,
// mongodb-memory-server's cache), one fetched once, the Java server, else
// one error naming each option. Each branch on stub binaries (a fake
// mongod: test/fixtures/fake-mongod.js) and a closed network: the fetch
// is pointed at servers of this test (MONGOMS_DOWNLOAD_URL), that serve an
// archive, reset every connection, or never answer. Every environment is
// built here (PATH, HOME), so a mongod or a cache on this machine changes
// nothing.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { startEmbeddedServer } = require('../../lib/mongo/embedded-server')
const { chooseEmbeddedServer } = require('../../lib/mongo/choose-server')
const { resolveMongo } = require('../../lib/mongo/resolve-mongo')
const { FAILURE_FILE } = require('../../lib/mongo/mongod-fetch')
const { captureLogger } = require('../helpers/capture-logger')
const { freePort } = require('../helpers/ports')
const { installFakeMongod, javaOnlyDir, mongodArchive, serveFiles, badServer, tempDir } = require('../helpers/fake-mongod')

const ARCH = process.arch

// What an operator sees at the default level (info and above).
function said (records, level) {
  return records.filter((r) => level ? r.level === level : !['trace', 'debug'].includes(r.level)).map((r) => r.msg)
}

function escape (text) {
  return String(text).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

async function start (t, options) {
  const server = await startEmbeddedServer({ port: 0, ...options })
  t.after(() => server.stop())
  return server
}

// A machine whose one way out is a server of this test that does to each
// connection what `mode` says (test/helpers/fake-mongod.js badServer), with
// a HOME of its own and PATH as given.
async function closedMachine (t, mode, PATH) {
  const network = await badServer(t, mode)
  const home = tempDir(t)
  const url = network.url('mongodb-linux-x86_64-debian12-8.2.6.tgz')
  return { network, url, cache: path.join(home, '.cache', 'mongodb-binaries'), env: { PATH, HOME: home, MONGOMS_DOWNLOAD_URL: url, MONGOMS_USE_HTTP: 'true' } }
}

async function withDb (uri, fn) {
  const client = await new MongoClient(uri, { serverSelectionTimeoutMS: 10000 }).connect()
  try {
    return await fn(client.db('choice').collection('items'))
  } finally {
    await client.close()
  }
}

test('a mongod on PATH is chosen over the Java server; its data lives in <db-path>/mongod, the Java server\'s in <db-path>, and neither reads the other\'s', { timeout: 180000 }, async (t) => {
  const bin = tempDir(t)
  const mongod = installFakeMongod(bin)
  const env = { PATH: `${bin}${path.delimiter}${javaOnlyDir(t)}`, HOME: tempDir(t) }
  const dbPath = path.join(tempDir(t), 'db')

  const first = captureLogger()
  const real = await start(t, { env, dbPath, logger: first.logger })
  assert.equal(real.kind, 'mongod')
  assert.equal(real.version, '8.2.6')
  assert.equal(real.dbPath, path.join(dbPath, 'mongod'))
  assert.deepEqual(said(first.records), [`started the embedded database: mongod 8.2.6 at ${real.uri}, data in ${dbPath}/mongod (on PATH: ${mongod})`])
  await withDb(real.uri, (items) => items.insertMany([1, 2, 3, 4, 5].map((i) => ({ i }))))
  await real.stop()

  const second = captureLogger()
  const java = await start(t, { env: { ...env, COLLECTOR_DB_SERVER: 'java' }, dbPath, logger: second.logger })
  assert.equal(java.kind, 'java')
  assert.equal(java.dbPath, dbPath)
  assert.deepEqual(said(second.records, 'info'), [`started the embedded database: the Java server (mongo-java-server) at ${java.uri}, data in ${dbPath}; skipped: a mongod, found or fetched (COLLECTOR_DB_SERVER=java)`])
  assert.deepEqual(said(second.records, 'warn'), [`mongod's data in ${dbPath}/mongod stays there, unread by the Java server; a mongod on PATH (or COLLECTOR_DB_SERVER=mongod) uses it`])
  assert.equal(await withDb(java.uri, (items) => items.countDocuments()), 0, 'the Java server does not see mongod\'s data')
  await withDb(java.uri, (items) => items.insertMany([{ i: 'a' }, { i: 'b' }]))
  await java.stop()

  const third = captureLogger()
  const again = await start(t, { env, dbPath, logger: third.logger })
  assert.equal(await withDb(again.uri, (items) => items.countDocuments()), 5, 'mongod\'s own data, kept across its restart')
  assert.deepEqual(said(third.records, 'warn'), [`the Java server's data in ${dbPath}/collector.mv.db stays there, unread by mongod (whose data is in ${dbPath}/mongod); COLLECTOR_DB_SERVER=java keeps to the Java server`])
  assert.ok(fs.statSync(path.join(dbPath, 'collector.mv.db')).isFile(), 'the Java server\'s file in the data directory')
  assert.ok(fs.statSync(path.join(dbPath, 'mongod')).isDirectory(), 'mongod\'s files in a folder of their own')
})

test('MONGOMS_SYSTEM_BINARY names the mongod to use, before PATH (in memory: on a throw-away dbpath); one that does not run is refused by name', { timeout: 120000 }, async (t) => {
  const named = installFakeMongod(tempDir(t), 'my-mongod', { version: '7.0.14' })
  const onPath = tempDir(t)
  installFakeMongod(onPath)
  const { logger, records } = captureLogger()
  const server = await start(t, { env: { PATH: onPath, HOME: tempDir(t), MONGOMS_SYSTEM_BINARY: named }, logger })
  assert.equal(server.version, '7.0.14')
  assert.match(said(records)[0], new RegExp(`^started the embedded database: mongod 7\\.0\\.14 at mongodb://127\\.0\\.0\\.1:\\d+, in memory: its data is gone when it stops \\(MONGOMS_SYSTEM_BINARY: ${escape(named)}\\)$`))
  // in memory, a mongod runs on a throw-away --dbpath, removed when it stops
  const args = fs.readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0')
  const dbpath = args[args.indexOf('--dbpath') + 1]
  assert.ok(fs.statSync(dbpath).isDirectory())
  await server.stop()
  assert.equal(fs.existsSync(dbpath), false)

  const broken = installFakeMongod(tempDir(t), 'mongod', { script: 'echo "mongod: error while loading shared libraries: libcrypto.so.3: cannot open shared object file" >&2; exit 127' })
  await assert.rejects(chooseEmbeddedServer({ env: { PATH: onPath, MONGOMS_SYSTEM_BINARY: broken } }), {
    code: 'ERR_DATABASE',
    message: `MONGOMS_SYSTEM_BINARY=${broken} is not a mongod that runs: --version exit code 127: mongod: error while loading shared libraries: libcrypto.so.3: cannot open shared object file`
  })
})

test('no java on this machine, a mongod in mongodb-memory-server\'s cache: the newest that runs starts (one for another architecture, or that does not run, is passed over)', { timeout: 120000 }, async (t) => {
  const home = tempDir(t)
  const cache = path.join(home, '.cache', 'mongodb-binaries')
  installFakeMongod(cache, `mongod-${ARCH}-debian-7.0.14`, { version: '7.0.14' })
  const chosen = installFakeMongod(cache, `mongod-${ARCH}-debian-8.2.6`, { version: '8.2.6' })
  installFakeMongod(cache, 'mongod-s390x-debian-9.9.9', { version: '9.9.9' })
  const broken = installFakeMongod(cache, `mongod-${ARCH}-ubuntu-9.0.0`, { script: 'exit 127' })
  const { logger, records } = captureLogger()
  const server = await start(t, { env: { PATH: tempDir(t), HOME: home }, logger })
  assert.equal(server.kind, 'mongod')
  assert.deepEqual(said(records), [`started the embedded database: mongod 8.2.6 at ${server.uri}, in memory: its data is gone when it stops (cached: ${chosen})`])
  assert.ok(fs.existsSync(broken))

  const pinned = await chooseEmbeddedServer({ env: { PATH: tempDir(t), HOME: home, MONGOMS_VERSION: '7.0.14' } })
  assert.equal(pinned.binary, path.join(cache, `mongod-${ARCH}-debian-7.0.14`), 'MONGOMS_VERSION picks that version')
  const elsewhere = tempDir(t)
  const own = installFakeMongod(elsewhere, `mongod-${ARCH}-debian-6.0.1`, { version: '6.0.1' })
  assert.equal((await chooseEmbeddedServer({ env: { PATH: tempDir(t), HOME: home, MONGOMS_DOWNLOAD_DIR: elsewhere, MONGOMS_VERSION: '6.0.1' } })).binary, own, 'MONGOMS_DOWNLOAD_DIR is searched')
})

test('no mongod anywhere: one is fetched once through mongodb-memory-server (from this test\'s server), with its progress said, and found in the cache at the next start', { timeout: 120000 }, async (t) => {
  const archive = mongodArchive(tempDir(t))
  const files = { [`/${archive.name}`]: archive.body, [`/${archive.name}.md5`]: `${archive.md5}  ${archive.name}\n` }
  const mirror = await serveFiles(t, files)
  const home = tempDir(t)
  const cache = path.join(home, '.cache', 'mongodb-binaries')
  const env = { PATH: tempDir(t), HOME: home, MONGOMS_DOWNLOAD_URL: mirror.url(archive.name), MONGOMS_USE_HTTP: 'true' }

  const first = captureLogger()
  const server = await start(t, { env, logger: first.logger })
  const binary = path.join(cache, 'mongod-x86_64-debian-8.2.6')
  assert.equal(server.kind, 'mongod')
  const lines = said(first.records)
  assert.equal(lines[0], `fetching mongod 8.2.6 once, from ${mirror.url(archive.name)} into ${cache} (up to 10 min; if it fails, the next option is used)`)
  assert.match(lines[1], /^fetching mongod 8\.2\.6: \d+\.\d KB of \d+\.\d KB \(100 %\)$/)
  assert.match(lines[2], new RegExp(`^fetched mongod 8\\.2\\.6 in [\\d.]+ s: ${escape(binary)} \\(later starts use it from there\\)$`))
  assert.equal(lines[3], `started the embedded database: mongod 8.2.6 at ${server.uri}, in memory: its data is gone when it stops (fetched just now: ${binary}); skipped: a mongod (none on PATH, none in ${cache})`)
  assert.equal(lines.length, 4)
  assert.deepEqual(mirror.requests, [`/${archive.name}`, `/${archive.name}.md5`], 'the archive and its checksum, once')
  await server.stop()

  const second = captureLogger()
  const cached = await start(t, { env, logger: second.logger })
  assert.deepEqual(said(second.records), [`started the embedded database: mongod 8.2.6 at ${cached.uri}, in memory: its data is gone when it stops (cached: ${binary})`])
  assert.equal(mirror.requests.length, 2, 'not fetched again')
})

test('a fetched archive whose checksum does not match is refused: the Java server starts, and the line says why', { timeout: 120000 }, async (t) => {
  const archive = mongodArchive(tempDir(t))
  const mirror = await serveFiles(t, { [`/${archive.name}`]: archive.body, [`/${archive.name}.md5`]: `${'0'.repeat(32)}  ${archive.name}\n` })
  const home = tempDir(t)
  const { logger, records } = captureLogger()
  const server = await start(t, { env: { PATH: javaOnlyDir(t), HOME: home, MONGOMS_DOWNLOAD_URL: mirror.url(archive.name), MONGOMS_USE_HTTP: 'true' }, logger })
  assert.equal(server.kind, 'java')
  assert.match(said(records).pop(), /; skipped: a mongod \(none on PATH, none in \S+\), fetching one \(failed: MD5 check failed! Binary MD5 is "[0-9a-f]{32}", Checkfile MD5 is "0{32}"\)$/)
  assert.deepEqual(fs.readdirSync(path.join(home, '.cache', 'mongodb-binaries')).filter((name) => name.startsWith('mongod-')), [], 'no binary kept')
})

test('a closed network: the fetch fails at once, the Java server starts saying why, and the failure is remembered for an hour (no second attempt for the same settings)', { timeout: 120000 }, async (t) => {
  const { network, url, cache, env } = await closedMachine(t, 'reset', javaOnlyDir(t))

  const first = captureLogger()
  const begun = Date.now()
  const java = await start(t, { env, logger: first.logger })
  assert.equal(java.kind, 'java')
  assert.ok(Date.now() - begun < 30000, 'falls through at once')
  assert.equal(network.connections, 1, 'one attempt (MONGOMS_MAX_RETRIES defaults to 1)')
  const line = said(first.records).pop()
  assert.match(line, new RegExp(`^started the embedded database: the Java server \\(mongo-java-server\\) at ${escape(java.uri)}, in memory: its data is gone when it stops; skipped: a mongod \\(none on PATH, none in ${escape(cache)}\\), fetching one \\(failed: Download failed for url "${escape(url)}": [^)]*ECONNRESET[^)]*\\)$`))
  assert.ok(fs.existsSync(path.join(cache, FAILURE_FILE)))

  const second = captureLogger()
  await start(t, { env, logger: second.logger })
  assert.equal(network.connections, 1, 'not tried again within the hour')
  assert.match(said(second.records).pop(), new RegExp(`fetching one \\(it failed less than a minute ago \\(Download failed for url "${escape(url)}": [^)]+\\); tried again after 60 min, or at the next start once ${escape(path.join(cache, FAILURE_FILE))} is removed\\)$`))

  await start(t, { env: { ...env, MONGOMS_DOWNLOAD_URL: network.url('mongodb-linux-x86_64-debian12-8.0.4.tgz') }, logger: captureLogger().logger })
  assert.equal(network.connections, 2, 'asked for something else (another URL, a mirror, a version), it is tried at once')

  fs.rmSync(path.join(cache, FAILURE_FILE))
  await start(t, { env: { ...env, MONGOMS_RUNTIME_DOWNLOAD: 'false' }, logger: captureLogger().logger })
  assert.equal(network.connections, 2, 'MONGOMS_RUNTIME_DOWNLOAD=false: no attempt')
})

test('a download that stalls is cut at its bound, and the next option starts', { timeout: 120000 }, async (t) => {
  const { network, url, env } = await closedMachine(t, 'silent', javaOnlyDir(t))
  const { logger, records } = captureLogger()
  const server = await start(t, { env, logger, fetch: { stallMs: 1500 } })
  assert.equal(server.kind, 'java')
  assert.equal(network.connections, 1)
  assert.match(said(records).pop(), new RegExp(`fetching one \\(failed: no data for 1\\.5 s from ${escape(url)}\\)$`))
})

test('nothing this machine can run: one error names each option, why it is not there, and how to get it', { timeout: 60000 }, async (t) => {
  const { url, cache, env } = await closedMachine(t, 'reset', tempDir(t))
  const error = await startEmbeddedServer({ env }).then(() => assert.fail('started'), (err) => err)
  assert.equal(error.code, 'ERR_DATABASE')
  const lines = error.message.split('\n')
  assert.equal(lines[0], 'no MongoDB to write to; any one of these will do:')
  assert.equal(lines[1], '  - MONGODB_URI set to your own MongoDB\'s connection string')
  assert.equal(lines[2], `  - a mongod on PATH, or named by MONGOMS_SYSTEM_BINARY (none on PATH, none in ${cache}): MongoDB Community Server, https://www.mongodb.com/try/download/community`)
  assert.match(lines[3], new RegExp(`^ {2}- the network, once: a mongod is fetched into ${escape(cache)} \\(failed: Download failed for url "${escape(url)}": [^)]+\\)$`))
  assert.equal(lines[4], '  - the Java server, mongo-java-server (no java on PATH), which needs a JDK 17+ and Maven: apt-get install openjdk-17-jdk-headless maven (Debian, Ubuntu), brew install openjdk@17 maven (macOS)')
  assert.equal(lines.length, 5)

  await assert.rejects(chooseEmbeddedServer({ env: { ...env, PATH: javaOnlyDir(t), COLLECTOR_DB_SERVER: 'mongod' } }), (err) => {
    assert.match(err.message, /^no MongoDB to write to \(COLLECTOR_DB_SERVER=mongod\); any one of these will do:\n/)
    assert.doesNotMatch(err.message, /JDK/, 'the Java server is not offered when it was ruled out')
    return true
  })
  await assert.rejects(chooseEmbeddedServer({ env: { ...env, COLLECTOR_DB_SERVER: 'java' } }), {
    message: 'no MongoDB to write to (COLLECTOR_DB_SERVER=java); any one of these will do:\n  - MONGODB_URI set to your own MongoDB\'s connection string\n  - the Java server, mongo-java-server (no java on PATH), which needs a JDK 17+ and Maven: apt-get install openjdk-17-jdk-headless maven (Debian, Ubuntu), brew install openjdk@17 maven (macOS)'
  })
  await assert.rejects(chooseEmbeddedServer({ env: { ...env, COLLECTOR_DB_SERVER: 'postgres' } }), {
    message: 'COLLECTOR_DB_SERVER must be mongod or java (unset: the first that this machine has), not "postgres"'
  })
})

test('resolveMongo says in one line what it used and why each earlier option was passed over; a mongod it started is ours to the next collector', { timeout: 120000 }, async (t) => {
  const bin = tempDir(t)
  installFakeMongod(bin)
  const env = { PATH: bin, HOME: tempDir(t) }
  const port = await freePort()
  const first = captureLogger()
  const { server } = await resolveMongo({ env, port, logger: first.logger })
  t.after(() => server.stop())
  assert.equal(server.port, port)
  assert.deepEqual(said(first.records), [`started the embedded database: mongod 8.2.6 at mongodb://127.0.0.1:${port}, in memory: its data is gone when it stops (on PATH: ${bin}/mongod); skipped: MONGODB_URI (not set), 127.0.0.1:${port} (nothing answers there)`])

  const second = captureLogger()
  assert.deepEqual(await resolveMongo({ env, port, logger: second.logger }), { uri: server.uri, server: null })
  assert.deepEqual(said(second.records), [`using the embedded database collector-cluster started at mongodb://127.0.0.1:${port} (mongod, pid ${server.pid}, in memory): MongoDB 8.2.6, standalone; skipped: MONGODB_URI (not set)`])
})
