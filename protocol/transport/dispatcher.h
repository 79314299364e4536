#pragma once

#include <thread>

#include "protocol/transport/mailbox.h"
#include "protocol/transport/transport.h"
#include "protocol/wire/validator.h"

namespace gossipd::protocol {

// What the dispatcher does with each message it reads: validated, it is
// filed in the mailbox, but a CLOSE_CONNECTION, which goes to `transport`'s
// release() (dropped without a transport); rejected, it is counted (by the
// validator) and dropped. A hub that hands messages over itself
// (InProcHub::set_sink) calls it.
void dispatch(Validator& validator, Mailbox& mailbox, RawMessage raw, Transport* transport = nullptr);

// The one thread that reads the transport: validates each message and files
// it in the mailbox. Nothing reaches a protocol without passing the validator.
// Between reads it has the transport send `close_request` (a
// CLOSE_CONNECTION envelope, this node's) to the senders of inbound
// connections past its bound (Transport::ask_to_close).
class Dispatcher {
 public:
  Dispatcher(Transport& transport, Validator& validator, Mailbox& mailbox, std::string close_request);
  ~Dispatcher() { stop(); }
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Joins the thread; the transport may be closed afterwards.
  void stop();

 private:
  void loop(std::stop_token stop);

  Transport& transport_;
  Validator& validator_;
  Mailbox& mailbox_;
  std::string close_request_;
  std::jthread thread_;
};

}  // namespace gossipd::protocol
