'use strict'

const os = require('node:os')
const { uriHosts } = require('../mongo/redact-uri')
const { isLoopback } = require('../shared/loopback')

/*
 * How many workers a collector that stores into MongoDB starts when it is
 * not told (`instances: 'auto'`). What limits its throughput is the
 * database, which spends about as much CPU per message as the collector
 * does. When the database runs on this host (the embedded server, or a URI
 * whose every host is a loopback address or a unix socket) it needs half
 * the cores: half of them (at least one) go to workers. One syslog worker
 * against two on 2 cores with the embedded server stored as much at
 * 10,000 lines/s for 0.8x the CPU and 100 MiB less memory, and more at
 * 40,000/s (docs/options.md). A database elsewhere: one worker per CPU,
 * the LoadBalancer's own default.
 */

/** Whether the database of `uri` runs on this host (`embedded`: a server this collector started). */
function databaseOnThisHost (uri, embedded = false) {
  if (embedded) return true
  const hosts = uriHosts(uri)
  if (!hosts || hosts.startsWith('srv:')) return false
  return hosts.split(',').every((host) => {
    let name
    try {
      name = decodeURIComponent(host).trim()
    } catch {
      return false // malformed: the driver says so when it connects
    }
    if (name.startsWith('/')) return true // a unix socket
    const bare = name.startsWith('[') ? name.slice(1, name.indexOf(']')) : name.replace(/:\d+$/, '')
    return isLoopback(bare)
  })
}

/** The workers for `instances: 'auto'`, given where the database runs. */
function workersForDatabase (uri, embedded = false, cpus = os.availableParallelism()) {
  return databaseOnThisHost(uri, embedded) ? Math.max(1, Math.floor(cpus / 2)) : cpus
}

module.exports = { databaseOnThisHost, workersForDatabase }
