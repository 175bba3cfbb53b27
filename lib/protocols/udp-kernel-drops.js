'use strict'

const fs = require('node:fs')

// The kernel's per-socket UDP table: one line per socket, whitespace
// separated; field 1 is local_address (hex address:hex port), field 9 the
// socket's inode, field 12 its drop count (datagrams discarded because the
// receive buffer was full, among other causes).
const TABLES = { udp4: '/proc/net/udp', udp6: '/proc/net/udp6' }
const LOCAL = 1
const INODE = 9
const DROPS = 12

/**
 * Datagrams the kernel dropped for one node:dgram socket, read from
 * /proc/net/udp(6) (the native receive path asks its socket directly with
 * SO_MEMINFO). The socket is found by inode, through the file descriptor of
 * dgram's handle, or by its local port where that cannot be had. Returns a
 * function giving the count now; it keeps the last value it read, so it
 * still answers after the socket closed, and gives 0 where /proc is absent.
 */
function dgramKernelDrops (socket, type) {
  const table = TABLES[type]
  const inode = socketInode(socket)
  const port = socket.address().port.toString(16).toUpperCase().padStart(4, '0')
  let last = 0
  return () => {
    const drops = readDrops(table, inode, port)
    if (drops !== null) last = drops
    return last
  }
}

function readDrops (table, inode, port) {
  let text
  try {
    text = fs.readFileSync(table, 'latin1')
  } catch {
    return null
  }
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/)
    if (fields.length <= DROPS) continue
    const match = inode !== null ? fields[INODE] === inode : fields[LOCAL].endsWith(`:${port}`)
    if (match) return Number(fields[DROPS])
  }
  return null
}

// dgram keeps its handle under a symbol of its own; its fd is the socket's.
// Node offers no public way to it, so any failure falls back to the port.
function socketInode (socket) {
  try {
    const state = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol')
    const fd = socket[state].handle.fd
    return fd >= 0 ? String(fs.fstatSync(fd).ino) : null
  } catch {
    return null
  }
}

module.exports = { dgramKernelDrops }
