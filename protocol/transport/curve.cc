#include "protocol/transport/curve.h"

#include <sys/stat.h>
#include <zmq.h>

#include <array>
#include <fstream>
#include <sstream>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

constexpr size_t kZ85KeyChars = 40;

void check_key(const std::string& key, const std::string& what, const std::string& path) {
  std::array<uint8_t, 32> raw{};
  if (key.size() != kZ85KeyChars || zmq_z85_decode(raw.data(), key.c_str()) == nullptr) {
    throw ProtocolConfigError("key file '" + path + "': " + what + " is not a 40-character Z85 key");
  }
}

// Returns (name, value) pairs of `name = value` lines.
std::vector<std::pair<std::string, std::string>> read_key_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ProtocolConfigError("cannot read key file '" + path + "'");
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  auto trim = [](std::string s) {
    const auto b = s.find_first_not_of(" \t\r");
    const auto e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  while (std::getline(in, line)) {
    line = trim(line);
    // Only whole-line comments: '#' is a Z85 digit.
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw ProtocolConfigError("key file '" + path + "': expected 'name = value'");
    out.emplace_back(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return out;
}

void write_text(const std::string& path, const std::string& text, mode_t mode) {
  {
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw ProtocolConfigError("cannot write key file '" + path + "'");
    out << text;
    if (!out.flush()) throw ProtocolConfigError("cannot write key file '" + path + "'");
  }
  ::chmod(path.c_str(), mode);
}

}  // namespace

KeyPair generate_keypair() {
  std::array<char, kZ85KeyChars + 1> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0) {
    throw ProtocolConfigError("CURVE key generation failed (libzmq built without libsodium?)");
  }
  return KeyPair{pub.data(), sec.data()};
}

void write_secret_key_file(const std::string& path, const KeyPair& keys) {
  write_text(path,
             "# gossipd CURVE keypair - keep secret\npublic-key = " + keys.public_key +
                 "\nsecret-key = " + keys.secret_key + "\n",
             0600);
}

void write_public_key_file(const std::string& path, const std::string& public_key) {
  write_text(path, "# gossipd CURVE public key\npublic-key = " + public_key + "\n", 0644);
}

KeyPair read_secret_key_file(const std::string& path) {
  KeyPair k;
  for (const auto& [name, value] : read_key_lines(path)) {
    if (name == "public-key") k.public_key = value;
    if (name == "secret-key") k.secret_key = value;
  }
  check_key(k.public_key, "public-key", path);
  check_key(k.secret_key, "secret-key", path);
  return k;
}

std::vector<std::string> read_public_key_file(const std::string& path) {
  std::vector<std::string> keys;
  for (const auto& [name, value] : read_key_lines(path)) {
    if (name != "public-key") continue;
    check_key(value, "public-key", path);
    keys.push_back(value);
  }
  if (keys.empty()) throw ProtocolConfigError("key file '" + path + "': no 'public-key = ...' line");
  return keys;
}

CurveOptions curve_options_from_files(const std::string& secret_key_file,
                                      const std::string& cluster_key_file) {
  CurveOptions o;
  o.own = read_secret_key_file(secret_key_file);
  o.allowed_client_keys = read_public_key_file(cluster_key_file);
  o.server_public_key = o.allowed_client_keys.front();
  return o;
}

}  // namespace gossipd::protocol
