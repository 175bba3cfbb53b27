'use strict'

const fs = require('node:fs')

/**
 * A worker reads the bytes of a batch the master sent by where it lies in
 * the disk buffer (ipc BATCH with [file, offset, length], see
 * lib/master/journal.js#where): the master wrote it there before sending,
 * so the bytes are in the page cache, and they cross no IPC channel (no
 * serialized copy in the master, no chunks and copies in the worker). One
 * segment file is open at a time; the master deletes a segment only once
 * every batch in it is acknowledged, so a worker reads before that.
 */
class DiskBufferReads {
  constructor () {
    this.file = null
    this.fd = -1
  }

  /** The batch's bytes, in a buffer of their own; throws an Error naming the file when they cannot be read whole. */
  read ([file, offset, length]) {
    if (file !== this.file) {
      this.close()
      this.fd = fs.openSync(file, 'r')
      this.file = file
    }
    const bytes = Buffer.allocUnsafeSlow(length)
    for (let done = 0; done < length;) {
      const n = fs.readSync(this.fd, bytes, done, length - done, offset + done)
      if (n === 0) throw new Error(`${file} ends at ${offset + done}, before the batch's ${length} bytes at ${offset}`)
      done += n
    }
    return bytes
  }

  /** Lets go of the open segment (the master may delete it). */
  close () {
    if (this.fd >= 0) fs.closeSync(this.fd)
    this.fd = -1
    this.file = null
  }
}

module.exports = { DiskBufferReads }
