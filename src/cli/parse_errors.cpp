// SPDX-License-Identifier: Apache-2.0
#include "parse_errors.hpp"

#include "did_you_mean.hpp"

#include <qpatch/engine/versions.hpp>

#include <algorithm>
#include <sstream>

namespace qpatch::cli {
namespace {

// The subcommand the words address (its flags are the ones a slip most likely meant).
const CLI::App* addressed(const CLI::App& app, const std::vector<std::string>& args) {
  for (const std::string& word : args) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == word) {
        return sub;
      }
    }
  }
  return &app;
}

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      names.push_back("--" + name);
    }
    for (const std::string& name : option->get_snames()) {
      names.push_back("-" + name);
    }
  }
  return names;
}

std::string usage_of(const CLI::App& app) {
  const std::string name = app.get_parent() ? "qpatch " + app.get_name() : "qpatch";
  return "run '" + name + " --help' for usage";
}

std::string lowercase_first(std::string text) {
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z') {
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  }
  return text;
}

} // namespace

std::vector<std::string> reword_parse_error(const CLI::ParseError& error,
                                            const CLI::App& app,
                                            const std::vector<std::string>& args) {
  const CLI::App& target = *addressed(app, args);
  const std::string text = error.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    const size_t colon = text.find(": ");
    std::istringstream words(colon == std::string::npos ? "" : text.substr(colon + 2));
    std::vector<std::string> extras;
    for (std::string word; words >> word;) {
      extras.push_back(word);
    }
    std::reverse(extras.begin(), extras.end()); // CLI11 joins them last first
    std::vector<std::string> lines;
    const auto flags = flag_names(target);
    for (const std::string& word : extras) {
      if (!word.empty() && word[0] == '-') {
        const std::string bare = word.substr(0, word.find('='));
        const std::string hint = did_you_mean(bare, flags);
        lines.push_back("unknown option '" + bare + "'" +
                        (hint.empty() ? "; " + usage_of(target) : hint));
      } else {
        lines.push_back("unexpected argument '" + word + "'; " + usage_of(target));
      }
    }
    return lines;
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    // CLI11 checks required options before extras: `graft --form x DIR` reported only "missing
    // --from". A mistyped option the command does not know is the cause to name first.
    const auto flags = flag_names(target);
    std::vector<std::string> unknown;
    for (const std::string& word : args) {
      const std::string bare = word.substr(0, word.find('='));
      if (bare.size() > 1 && bare[0] == '-' && bare != "--" &&
          std::find(flags.begin(), flags.end(), bare) == flags.end()) {
        const std::string hint = did_you_mean(bare, flags);
        if (!hint.empty()) {
          unknown.push_back("unknown option '" + bare + "'" + hint);
        }
      }
    }
    if (!unknown.empty()) {
      return unknown;
    }
    const std::string name = text.substr(0, text.find(" is required"));
    const std::string where = target.get_parent() ? target.get_name() + ": " : "";
    return {where + "missing " + name + "; " + usage_of(target)};
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr) {
    const size_t split = text.find(" excludes ");
    return {text.substr(0, split) + " and " + text.substr(split + 10) + " cannot be used together"};
  }
  return {lowercase_first(text)};
}

CLI::Validator one_of(std::string what, std::vector<std::string> choices) {
  std::string listed;
  for (const std::string& choice : choices) {
    listed += (listed.empty() ? "" : ", ") + choice;
  }
  return CLI::Validator(
      [what = std::move(what), choices = std::move(choices), listed](std::string& value) {
        if (std::find(choices.begin(), choices.end(), value) != choices.end()) {
          return std::string();
        }
        return "unknown " + what + " '" + value + "'" + did_you_mean(value, choices) + " (" +
               listed + ")";
      },
      "");
}

std::string engine_option_help(const std::string& what) {
  std::string names;
  for (const std::string& choice : engine::engine_choices()) {
    names += (names.empty() ? "" : "|") + choice;
  }
  return names + ", or ENGINE@REF (REF: main, YYYY-MM-DD, a release) for one version: " + what;
}

CLI::Validator engine_choice() {
  return CLI::Validator(
      [](std::string& value) {
        const auto parsed = engine::parse_engine_choice(value);
        if (parsed.choice) {
          return std::string();
        }
        if (!parsed.unknown.empty()) {
          const std::vector<std::string> choices = engine::engine_choices();
          std::string listed;
          for (const std::string& choice : choices) {
            listed += choice + ", ";
          }
          return "unknown engine '" + parsed.unknown + "'" + did_you_mean(parsed.unknown, choices) +
                 " (" + listed + "or ENGINE@REF: one version)";
        }
        return parsed.error;
      },
      "");
}

} // namespace qpatch::cli
