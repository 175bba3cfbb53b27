'use strict'

// The embedded servers collector-cluster started for this user, one small
// file each, `~/.collector-cluster/servers/<pid>.json` ({ pid, host, port,
// kind, version, dbPath, owner: the pid of the process that started it,
// startedAt }), written once the server listens and removed
// when it stops. A server answering on a port is ours when the pid it
// reports of itself (serverStatus, as mongod and mongo-java-server both
// answer) has a file here naming that port: the server is asked, never
// written to, so nothing of ours lands beside the users' collections.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { makeDir, PRIVATE_DIR } = require('../shared/make-dir')
const { isAlive } = require('../shared/is-alive')
const { readJsonFile, writeJsonFile } = require('../shared/json-file')

/** Where the records live unless told otherwise. */
function defaultServersDir () {
  return path.join(os.homedir(), '.collector-cluster', 'servers')
}

/**
 * Records a running embedded server, started by this process; records of
 * servers whose pid is gone (their starter was killed outright) are
 * removed on the way.
 * @param {{ pid: number, host: string, port: number, kind: string, version?: string|null, dbPath: string|null }} server
 * @param {{ dir?: string }} [options]
 * @returns {() => void} removes the record (idempotent, synchronous: safe in an 'exit' hook)
 * @throws {NodeJS.ErrnoException} when the directory or file cannot be written
 */
function recordServer ({ pid, host, port, kind, version, dbPath }, { dir = defaultServersDir() } = {}) {
  makeDir(dir, PRIVATE_DIR)
  removeStale(dir)
  const file = path.join(dir, `${pid}.json`)
  writeJsonFile(file, { pid, host, port, kind, version: version || null, dbPath: dbPath || null, owner: process.pid, startedAt: new Date().toISOString() })
  let removed = false
  return () => {
    if (removed) return
    removed = true
    fs.rmSync(file, { force: true })
  }
}

/**
 * The record of the server that reports `pid` and answers on `port`, or null.
 * @param {{ pid: number|undefined, port: number }} reported
 * @param {{ dir?: string }} [options]
 * @returns {{ pid: number, host: string, port: number, kind: string, version: string|null, dbPath: string|null, owner: number, startedAt: string }|null}
 */
function findStartedServer ({ pid, port }, { dir = defaultServersDir() } = {}) {
  if (!Number.isInteger(pid) || pid <= 0) return null
  const record = readJsonFile(path.join(dir, `${pid}.json`))
  return record && record.pid === pid && record.port === port ? record : null
}

/**
 * The record of the running server that the process `owner` started (the
 * one `collector db start` runs under PM2, say), or null.
 * @param {number} owner
 * @param {{ dir?: string }} [options]
 * @returns {object|null} as findStartedServer's
 */
function findServerStartedBy (owner, { dir = defaultServersDir() } = {}) {
  let names
  try {
    names = fs.readdirSync(dir)
  } catch {
    return null
  }
  for (const name of names) {
    const record = /^\d+\.json$/.test(name) ? readJsonFile(path.join(dir, name)) : null
    if (record && record.owner === owner && isAlive(record.pid)) return record
  }
  return null
}

function removeStale (dir) {
  for (const name of fs.readdirSync(dir)) {
    const match = /^(\d+)\.json$/.exec(name)
    if (match && !isAlive(Number(match[1]))) fs.rmSync(path.join(dir, name), { force: true })
  }
}

module.exports = { recordServer, findStartedServer, findServerStartedBy, defaultServersDir }
