#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gossipd::protocol {

// ZAP domain our ROUTERs announce; the node's ZAP handler serves it.
constexpr std::string_view kZapDomain = "gossipd";

// A CURVE keypair, both keys in Z85 text (40 characters each).
struct KeyPair {
  std::string public_key;
  std::string secret_key;
};

// Encryption and authentication for one node. In the usual set-up the whole
// cluster shares one keypair (`gossipctl keygen`): every ROUTER serves with
// it, every DEALER presents it, and the ZAP handler admits only its public key.
struct CurveOptions {
  KeyPair own;                                   // server secret + client identity
  std::string server_public_key;                 // what DEALERs expect from peers
  std::vector<std::string> allowed_client_keys;  // admitted by the ZAP handler
};

KeyPair generate_keypair();

// Key files are text lines `public-key = Z85` / `secret-key = Z85`; lines starting
// with `#` are comments. The secret file holds both keys and is written with mode 0600.
void write_secret_key_file(const std::string& path, const KeyPair& keys);
void write_public_key_file(const std::string& path, const std::string& public_key);
KeyPair read_secret_key_file(const std::string& path);
// Every public key listed in the file (one or more `public-key =` lines).
std::vector<std::string> read_public_key_file(const std::string& path);

// `--curve-secret-key FILE --curve-cluster-key FILE`: serve and connect with
// the secret file's keypair, expect and admit the cluster file's key(s).
CurveOptions curve_options_from_files(const std::string& secret_key_file,
                                      const std::string& cluster_key_file);

}  // namespace gossipd::protocol
