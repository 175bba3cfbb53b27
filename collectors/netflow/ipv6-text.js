'use strict'

// RFC 5952 text of 16 bytes: lower case, leading zeros dropped, the longest
// run of two or more zero groups (the first of equals) shortened to "::".
// collectors/hep/hep-decoder.js has its own copy: collectors/ folders do
// not import one another, and lib/ is not ours to change from here.

/**
 * @param {Buffer} buf
 * @param {number} start offset of the 16 bytes
 * @returns {string}
 */
function ipv6Text (buf, start) {
  const groups = new Array(8)
  for (let i = 0; i < 8; i++) groups[i] = (buf[start + 2 * i] << 8) | buf[start + 2 * i + 1]
  let bestAt = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) { bestAt = i; bestLength = j - i }
    i = j
  }
  if (bestAt === -1) return hexJoin(groups, 0, 8)
  return `${hexJoin(groups, 0, bestAt)}::${hexJoin(groups, bestAt + bestLength, 8)}`
}

function hexJoin (groups, from, to) {
  let text = ''
  for (let i = from; i < to; i++) text += (i > from ? ':' : '') + groups[i].toString(16)
  return text
}

module.exports = { ipv6Text }
