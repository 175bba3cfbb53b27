'use strict'

// RFC 5952 text of 16 bytes: lower case, leading zeros dropped, the longest
// run of two or more zero groups (the first of equals) shortened to "::".
// The one owner of that text, for every decoder (HEP, NetFlow/IPFIX). Groups
// come from byte tables: a third of a flow store's addresses may be IPv6,
// and number-to-hex conversion was most of their cost.

const BARE = Array.from({ length: 256 }, (_, b) => b.toString(16)) // no leading zero
const PADDED = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'))

/**
 * @param {Buffer} buf
 * @param {number} start offset of the 16 bytes
 * @returns {string}
 */
function ipv6Text (buf, start) {
  let bestAt = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (buf[start + 2 * i] !== 0 || buf[start + 2 * i + 1] !== 0) { i++; continue }
    let j = i
    while (j < 8 && buf[start + 2 * j] === 0 && buf[start + 2 * j + 1] === 0) j++
    if (j - i > bestLength) { bestAt = i; bestLength = j - i }
    i = j
  }
  let text = ''
  for (let i = 0; i < 8; i++) {
    if (i === bestAt) {
      text += '::'
      i += bestLength - 1
      continue
    }
    if (i > 0 && i !== bestAt + bestLength) text += ':'
    const high = buf[start + 2 * i]
    const low = buf[start + 2 * i + 1]
    text += high === 0 ? BARE[low] : BARE[high] + PADDED[low]
  }
  return text
}

module.exports = { ipv6Text }
