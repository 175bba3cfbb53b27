'use strict'

const fs = require('node:fs')

// Descriptors the master needs beside its connections: its workers' IPC,
// the disk buffer's segments, logs, the stats file, a TLS reload, DNS.
const RESERVE = 128

/**
 * How many connections a tcp_server can hold within the process's
 * open-file limit (RLIMIT_NOFILE, soft: Node raises it to the hard limit at
 * start, so a low one is the hard limit a shell's `ulimit -n` or a service
 * manager set): `{ connections, limit, open }`, `connections` the asked
 * number when it fits. Past the limit accept() fails with EMFILE inside
 * libuv, which closes connections nobody counts and leaves the stats file
 * unwritable; a bound below it lets the limits that count and evict act
 * first. Where /proc is not there (not Linux), the asked number.
 * @param {number} asked maxConnections
 */
function connectionBudget (asked, { limitsFile = '/proc/self/limits', fdDir = '/proc/self/fd' } = {}) {
  let limit
  let open
  try {
    const line = fs.readFileSync(limitsFile, 'utf8').split('\n').find((l) => l.startsWith('Max open files'))
    limit = line ? Number(line.slice('Max open files'.length).trim().split(/\s+/)[0]) : NaN
    open = fs.readdirSync(fdDir).length
  } catch {
    return { connections: asked, limit: null, open: null }
  }
  if (!Number.isFinite(limit)) return { connections: asked, limit: null, open } // "unlimited"
  return { connections: Math.max(1, Math.min(asked, limit - open - RESERVE)), limit, open }
}

module.exports = { connectionBudget, RESERVE }
