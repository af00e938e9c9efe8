//===- Processes.cpp - the programs a layout search starts ----------------===//

#include "shardc/Tune/Processes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

using namespace shardc;

std::string shardc::readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

bool shardc::writeFile(llvm::StringRef path, llvm::StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << text;
  return !os.has_error();
}

Finished shardc::runProgram(std::vector<std::string> argv, const std::string &log,
                            unsigned timeout) {
  Finished result;
  auto program = llvm::sys::findProgramByName(argv[0]);
  if (!program) {
    result.err = "error: cannot find '" + argv[0] + "'";
    return result;
  }
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  const std::string out = log + ".out", err = log + ".err";
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef("/dev/null"), llvm::StringRef(out),
                                                llvm::StringRef(err)};
  std::string message;
  bool failedToStart = false;
  llvm::sys::ProcessInfo child = llvm::sys::ExecuteNoWait(*program, args, std::nullopt, redirects,
                                                          0, &message, &failedToStart);
  bool stopped = false;
  if (!failedToStart) {
    // Past --timeout, SIGTERM first: mpirun then ends its ranks (SIGKILL would leave
    // them running); SIGKILL if it has not ended 10 s later.
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::seconds(timeout);
    llvm::sys::ProcessInfo done;
    while ((done = llvm::sys::Wait(child, 0, &message)).Pid == 0) {
      if (!stopped && Clock::now() >= deadline) {
        stopped = true;
        ::kill(child.Pid, SIGTERM);
      }
      if (stopped && Clock::now() >= deadline + std::chrono::seconds(10)) {
        ::kill(child.Pid, SIGKILL);
        done = llvm::sys::Wait(child, std::nullopt, &message);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result.status = done.ReturnCode;
  }
  result.out = readFile(out);
  result.err = readFile(err);
  if (stopped)
    result.err += "error: stopped after " + std::to_string(timeout) + " s (--timeout)";
  else if (failedToStart || result.status < 0)
    result.err += "error: " + message;
  if (stopped && result.status == 0)
    result.status = -2;
  return result;
}

std::string shardc::besideThisProgram(const char *argv0, llvm::StringRef name) {
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&shardc::besideThisProgram);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, name);
  return std::string(path);
}

std::vector<std::string> shardc::launcherCommand(llvm::StringRef launcherText, int64_t n,
                                                 bool network, bool here) {
  std::vector<std::string> argv;
  if (!launcherText.empty() && !here) {
    llvm::SmallVector<llvm::StringRef> words;
    llvm::StringRef(launcherText).split(words, ' ', -1, false);
    for (llvm::StringRef word : words)
      argv.push_back(word == "{ranks}" ? std::to_string(n) : word.str());
    return argv;
  }
  argv = {"mpirun", "--oversubscribe"};
  if (geteuid() == 0)
    argv.push_back("--allow-run-as-root");
  if (network)
    llvm::append_range(argv, std::vector<std::string>{"--mca", "btl", "tcp,self"});
  llvm::append_range(argv, std::vector<std::string>{"-np", std::to_string(n)});
  return argv;
}

int64_t shardc::memoryPerRankOfThisHost(int64_t ranksHere) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  int64_t kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:")
      return kib * 1024 / ranksHere;
  return INT64_MAX;
}
