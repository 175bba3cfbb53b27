'use strict'

// Which server a worker writes to, from what it says of itself (buildInfo,
// hello) and where it is: MongoDB and its version and topology, or a
// MongoDB-compatible server. Servers known to break a guarantee the
// collectors rely on carry that risk, so that a worker can say it in one
// line, and refuse unless the operator accepted it (the `allowServer`
// worker setting). Runs in the workers.

/**
 * Known risks, by server kind: what the server does not do that the
 * collectors rely on, as the one line a worker logs or refuses with.
 * Measured, not assumed: FerretDB 1.24 (SQLite and PostgreSQL backends)
 * lost concurrent $inc upserts on one document while each reply said
 * matched (4 x 300 increments stored as 598).
 */
const RISKS = {
  ferretdb: 'concurrent updates to one document are not atomic there (concurrent $inc upserts were lost while every reply said matched): per-minute counters and stream packet counts can come out short'
}

// Managed services that speak the protocol, by the host names the MongoDB
// driver itself recognises them by.
const HOSTED = [
  { kind: 'cosmosdb', name: 'Azure Cosmos DB', pattern: /\.cosmos\.azure\.com$/i },
  { kind: 'documentdb', name: 'Amazon DocumentDB', pattern: /\.docdb(-elastic)?\.amazonaws\.com$/i }
]

/**
 * What a server is, from its replies: `{ kind, name, version, topology,
 * risk }`. `kind`: mongodb, ferretdb, cosmosdb, documentdb, or compatible
 * (answers like MongoDB without saying which build it is, as the embedded
 * mongo-java-server does); `topology`: standalone, replica set <name>, or
 * sharded (mongos); `risk`: the known risk's line, or null.
 *
 * @param {object} buildInfo the reply to { buildInfo: 1 } ({} if refused)
 * @param {object} hello the reply to { hello: 1 }
 * @param {string[]} hosts the hosts of the connection string
 */
function describeServer (buildInfo, hello, hosts = []) {
  const topology = hello.msg === 'isdbgrid' ? 'sharded (mongos)' : hello.setName ? `replica set ${hello.setName}` : 'standalone'
  const reported = typeof buildInfo.version === 'string' ? buildInfo.version : 'unknown'
  const hosted = HOSTED.find(({ pattern }) => hosts.some((host) => pattern.test(host)))
  let identity
  if (typeof buildInfo.ferretdbVersion === 'string') {
    identity = { kind: 'ferretdb', name: 'FerretDB', version: buildInfo.ferretdbVersion }
  } else if (hosted) {
    identity = { kind: hosted.kind, name: hosted.name, version: `reporting MongoDB ${reported}` }
  } else if (typeof buildInfo.gitVersion === 'string' && buildInfo.gitVersion.length > 0) {
    const enterprise = Array.isArray(buildInfo.modules) && buildInfo.modules.includes('enterprise')
    identity = { kind: 'mongodb', name: enterprise ? 'MongoDB Enterprise' : 'MongoDB', version: reported }
  } else {
    identity = { kind: 'compatible', name: 'MongoDB-compatible server', version: `reporting MongoDB ${reported}` }
  }
  return { ...identity, topology, risk: RISKS[identity.kind] || null }
}

/** One line for the log: "FerretDB 1.24.0, standalone". */
function serverLine ({ name, version, topology }) {
  return `${name} ${version}, ${topology}`
}

/**
 * Asks the server of `db` (a native Db) who it is. buildInfo may be
 * refused (an Atlas tier without it): then it is described by hello alone.
 */
async function identifyServer (db, hosts) {
  const admin = db.admin()
  const [buildInfo, hello] = await Promise.all([
    admin.command({ buildInfo: 1 }).catch(() => ({})),
    askHello(admin)
  ])
  return describeServer(buildInfo, hello, hosts)
}

/**
 * `hello`, or the legacy `isMaster` (the same reply, `ismaster` for
 * `isWritablePrimary`) from a server without hello: MongoDB before 4.4.2,
 * which driver 7 still speaks to, refuses it as an unknown command. Any
 * other refusal is the caller's.
 */
async function askHello (admin) {
  try {
    return await admin.command({ hello: 1 })
  } catch (err) {
    if (!isUnknownCommand(err)) throw err
    return admin.command({ isMaster: 1 })
  }
}

// CommandNotFound (59); older servers said only "no such cmd".
function isUnknownCommand (err) {
  return Boolean(err) && (err.code === 59 || err.codeName === 'CommandNotFound' || /no such (cmd|command)/i.test(String(err.message)))
}

module.exports = { describeServer, identifyServer, serverLine, RISKS }
