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

class EtcdProcess {
 public:
  EtcdProcess() {
    const char* bin = std::getenv("STRATA_ETCD");
    binary_ = bin && *bin ? bin : "etcd";
    char tmpl[] = "/tmp/strata-etcd-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~EtcdProcess() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts etcd (again, on the same ports and data when restarted) and waits until it serves.
  bool start() {
    if (client_port_ == 0) {
      client_port_ = free_port();
      peer_port_ = free_port();
    }
    const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    std::vector<std::string> args = {binary_,
                                     "--name=t",
                                     "--data-dir=" + dir_ + "/data",
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=t=" + peer};
    const std::string log = dir_ + "/etcd.log";
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
    for (int i = 0; i < 200; ++i) {  // up to 10 s
      if (port_accepts(client_port_)) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  int client_port() const { return client_port_; }
  const std::string& binary() const { return binary_; }

 private:
  std::string binary_;
  std::string dir_;
  int client_port_ = 0;
  int peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace strata::broker::cluster::testing
