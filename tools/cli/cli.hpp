// SPDX-License-Identifier: GPL-2.0-or-later
//
// The mprace command-line tool: one command per invocation, or several in one invocation
// (separated by a lone ";" argument, or read from a script by `mprace run FILE`), all on the
// same opened board. That matters for the virtual board, which lives only as long as the
// process that opened it.
#ifndef TOOLS_CLI_CLI_HPP
#define TOOLS_CLI_CLI_HPP

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mprace/mprace.hpp"

namespace cli {

// A bad command line: printed with the command's usage, exit status 2.
class UsageError : public std::runtime_error {
public:
	UsageError(const std::string &command, const std::string &msg)
		: std::runtime_error(msg), command_(command) {}
	const std::string &command() const { return command_; }

private:
	std::string command_;
};

// A command that ran but found something wrong (data mismatch, timeout): exit status 1.
class Failed : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

// The arguments of one command: positionals and --options, parsed against what the command
// accepts (`valued` take a value, `flags` do not). "-o X" short forms are listed as "-o".
class Args {
public:
	Args(const std::string &command, const std::vector<std::string> &argv,
	     const std::vector<std::string> &valued, const std::vector<std::string> &flags);

	bool has(const std::string &opt) const { return opts_.count(opt) != 0; }
	std::string get(const std::string &opt, const std::string &def = std::string()) const;
	const std::vector<std::string> &pos() const { return pos_; }
	// The i-th positional, or a usage error naming `what`.
	const std::string &at(std::size_t i, const char *what) const;
	void max_positionals(std::size_t n) const;
	[[noreturn]] void fail(const std::string &msg) const { throw UsageError(command_, msg); }
	const std::string &command() const { return command_; }

private:
	std::string command_;
	std::vector<std::string> pos_;
	std::map<std::string, std::string> opts_;
};

// Buffers this process holds (mem alloc), by the small number `mem list` shows.
struct HeldBuffer {
	std::unique_ptr<mprace::DMABuffer> buf;
	void *anon = nullptr; // user memory: our mmap
	std::size_t size = 0;
	~HeldBuffer();
};

class Session {
public:
	Session(std::string device, bool no_check, bool quiet)
		: device_(std::move(device)), no_check_(no_check), quiet_(quiet) {}
	~Session();

	mprace::Board &board();
	// The engine (created on first use: that resets both channels and sets up the rings).
	mprace::DMAEngine &engine(bool irq = false);
	bool quiet() const { return quiet_; }
	const std::string &device() const { return device_; }
	std::map<unsigned, HeldBuffer> &held() { return held_; }
	unsigned next_id() { return ++last_id_; }

	// Runs one command; throws UsageError / Failed / std::exception.
	void run(const std::vector<std::string> &argv);

private:
	std::string device_;
	bool no_check_, quiet_;
	std::unique_ptr<mprace::Board> board_;
	std::unique_ptr<mprace::DMAEngine> engine_;
	bool engine_irq_ = false;
	std::map<unsigned, HeldBuffer> held_;
	unsigned last_id_ = 0;
};

// Help of one command ("" for the overview); false for an unknown command.
bool print_help(const std::string &command, std::FILE *f);

// The command table.
struct Command {
	const char *name;       // "reg read"
	const char *synopsis;   // "REG"
	const char *summary;    // one line
	const char *help;       // the rest of --help
	void (*fn)(Session &, const Args &);
	std::vector<std::string> valued;
	std::vector<std::string> flags;
};
const std::vector<Command> &commands();

// Splits a script line into words: whitespace separates, '…' and "…" quote, # starts a comment.
std::vector<std::string> split_words(const std::string &line);

} // namespace cli

#endif
