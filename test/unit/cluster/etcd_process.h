// EtcdProcess: a real single-member etcd on loopback ports chosen by the OS, with its data in a
// temporary directory, for tests of EtcdClient. The binary comes from $STRATA_ETCD (set by meson)
// or `etcd` on PATH (tools/setup.sh installs Debian's etcd-server).
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace strata::broker::cluster::testing {

// A port the OS just handed out (bound, then released for etcd to take).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// One etcd member; `initial_cluster` names every member ("a=http://127.0.0.1:P,...").
class EtcdMember {
 public:
  EtcdMember(std::string name, std::string dir)
      : name_(std::move(name)),
        dir_(std::move(dir)),
        client_port_(free_port()),
        peer_port_(free_port()) {
    const char* bin = std::getenv("STRATA_ETCD");
    binary_ = bin && *bin ? bin : "etcd";
  }
  ~EtcdMember() { stop(); }

  std::string peer_url() const { return "http://127.0.0.1:" + std::to_string(peer_port_); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  const std::string& binary() const { return binary_; }

  // Starts the process (again, on the same ports and data when restarted).
  void spawn(const std::string& initial_cluster) {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
    std::vector<std::string> args = {binary_,
                                     "--name=" + name_,
                                     "--data-dir=" + dir_ + "/" + name_,
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer_url(),
                                     "--initial-advertise-peer-urls=" + peer_url(),
                                     "--initial-cluster=" + initial_cluster};
    const std::string log = dir_ + "/" + name_ + ".log";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
  }
  // Waits until the client port accepts (up to 10 s); false if the process died.
  bool wait_listening() {
    for (int i = 0; i < 200; ++i) {
      if (port_accepts(client_port_)) return true;
      int status = 0;
      if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void stop() {  // kill -9
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string name_;
  std::string dir_;
  std::string binary_;
  int client_port_;
  int peer_port_;
  pid_t pid_ = -1;
};

// An etcd cluster of `members` members in a temporary directory.
class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 1) {
    char tmpl[] = "/tmp/strata-etcd-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    for (int i = 0; i < members; ++i) {
      std::string name("m");  // (not "m" + to_string: GCC 12's -Wrestrict false positive)
      name.append(std::to_string(i));
      if (i) initial_.append(",");
      initial_.append(name).append("=");
      members_.push_back(std::make_unique<EtcdMember>(name, dir_));
      initial_.append(members_.back()->peer_url());
    }
  }
  ~EtcdCluster() {
    members_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool start() {
    for (auto& m : members_) m->spawn(initial_);
    bool ok = true;
    for (auto& m : members_) ok = m->wait_listening() && ok;
    return ok;
  }
  void stop(size_t member) { members_.at(member)->stop(); }
  bool restart(size_t member) {
    members_.at(member)->spawn(initial_);
    return members_.at(member)->wait_listening();
  }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (const auto& m : members_) out.push_back(m->endpoint());
    return out;
  }
  const std::string& binary() const { return members_.front()->binary(); }

 private:
  std::string dir_;
  std::string initial_;
  std::vector<std::unique_ptr<EtcdMember>> members_;
};

// The single-member cluster most tests use.
class EtcdProcess {
 public:
  bool start() { return started_ ? cluster_.restart(0) : (started_ = cluster_.start()); }
  void stop() { cluster_.stop(0); }
  std::string endpoint() const { return cluster_.endpoints().front(); }
  const std::string& binary() const { return cluster_.binary(); }

 private:
  EtcdCluster cluster_{1};
  bool started_ = false;
};

}  // namespace strata::broker::cluster::testing
