'use strict'
// The SIP stream of the HEP SIP benchmarks (hep-sip.js, hep-vs-sipcapture.js):
// calls of 5 SIP messages each (INVITE with SDP, 180, 200 with SDP, ACK,
// BYE, as SIPp's uac and uas send them, 300 to 900 bytes), 100 calls in
// flight as on a busy trunk, each message HEP3-encoded by hep-js (protocol
// type 1). Given the same calls and capture second, the bytes are the same:
// two receivers fed from it are fed the same stream.
const PER_CALL = 5
const IN_FLIGHT = 100

function sdp (ip, port) {
  return ['v=0', `o=user1 53655765 2353687637 IN IP4 ${ip}`, 's=-', `c=IN IP4 ${ip}`, 't=0 0', `m=audio ${port} RTP/AVP 0 8 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=ptime:20', ''].join('\r\n')
}

/** Call `n`'s SIP as SIPp's uac and uas send it: [text, sent by the callee] per message. */
function callMessages (n) {
  const callId = `${n}-4711@10.0.0.1`
  const from = `sipp <sip:sipp@10.0.0.1:5060>;tag=${n}SIPpTag00`
  const to = '<sip:+4930123@10.0.0.2:5060>'
  const head = (line, cseq, toTag, body = '') => [line, `Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-${n}-${cseq.replace(' ', '')}`, `From: ${from}`, `To: ${to}${toTag ? `;tag=${n}SIPpTag01` : ''}`,
    `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Contact: <sip:sipp@10.0.0.1:5060>', 'Max-Forwards: 70', 'Subject: Performance Test',
    ...(body ? ['Content-Type: application/sdp'] : []), `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')
  return [
    [head('INVITE sip:+4930123@10.0.0.2:5060 SIP/2.0', '1 INVITE', false, sdp('10.0.0.1', 6000)), false],
    [head('SIP/2.0 180 Ringing', '1 INVITE', true), true],
    [head('SIP/2.0 200 OK', '1 INVITE', true, sdp('10.0.0.2', 6002)), true],
    [head('ACK sip:+4930123@10.0.0.2:5060 SIP/2.0', '1 ACK', true), false],
    [head('BYE sip:+4930123@10.0.0.2:5060 SIP/2.0', '2 BYE', true), false]
  ]
}

/**
 * `calls` calls as HEP3 datagrams (calls × 5), numbered from `first`,
 * interleaved 100 at a time: the INVITEs of 100 calls, their 180s, ...
 * Message m of a call is captured at second `t0 + m`, its call's index in
 * the group as microseconds. (The same bytes sent twice are copies of one
 * capture to the hep collector: stored once.)
 */
function hepSipPackets (calls, t0, first = 0) {
  const HEPjs = require('hep-js') // a dev dependency, loaded where packets are made (the sender)
  const packets = []
  for (let done = 0; done < calls; done += IN_FLIGHT) {
    const group = Array.from({ length: Math.min(IN_FLIGHT, calls - done) }, (_, k) => callMessages(first + done + k))
    for (let m = 0; m < PER_CALL; m++) {
      for (const [k, messages] of group.entries()) {
        const [text, back] = messages[m]
        packets.push(HEPjs.encapsulate(text, { protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', dstIp: back ? '10.0.0.1' : '10.0.0.2', srcPort: 5060, dstPort: 5060, timeSeconds: t0 + m, timeUseconds: k, payloadType: 1, captureId: 1, hepNodeName: 'bench' }))
      }
    }
  }
  return packets
}

module.exports = { PER_CALL, callMessages, hepSipPackets }
