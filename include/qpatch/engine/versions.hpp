// SPDX-License-Identifier: Apache-2.0
// Engine versions as data. A verdict is true for one version of one engine, so every naming row
// and every rule that changed names the change that opened it (the PR, its merge commit, the day
// main had it, the first release that ships it). Each engine's folder holds its own history
// (src/engine/<engine>/history.cpp); this header is the vocabulary they share:
//   - a Change: one merged PR that changes a verdict qpatch models;
//   - a History: an engine's changes, the oldest day modelled, the newest source read, releases;
//   - an EngineVersion: main as of one day (the changes merged by then), optionally with PRs
//     that are not merged in the newest source read (SGLang's #35887), judged on its own.
// By default qpatch judges every version whose verdicts can differ for the checkpoint's method
// and architecture; `--engine vllm@REF` pins one (REF: main, YYYY-MM-DD, or a release).
#pragma once

#include <qpatch/engine/engines.hpp>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::engine {

struct Change {
  std::string_view id;      // the PR ("#41965"), as reports cite it
  std::string_view commit;  // its merge commit, abbreviated; "" when not merged
  std::string_view date;    // YYYY-MM-DD: main has it from this day; "" when not merged
  std::string_view release; // the first release that ships it ("0.21"); "" when not known
  std::string_view what;    // one line: what changed, for --verbose and the README
  // The quant methods whose verdicts it can change (canonical names, space-separated), and the
  // architectures (a prefix of config.json's architectures[0]); "" for every one.
  std::string_view methods;
  std::string_view architectures;

  bool merged() const { return !date.empty(); }
  bool concerns(std::string_view method, std::string_view architecture) const;
};

// An engine's history rows, from functions that each hold a span of them (a history is long
// data, and no function runs past 100 lines), in the order given.
std::vector<Change> joined_changes(std::initializer_list<std::vector<Change> (*)()> spans);

struct Release {
  std::string_view name; // "0.27"
  std::string_view date; // the day main was cut for it (rows merged by then are in it)
  std::string_view commit;
  bool inferred = false; // the date is inferred (from the release date), not the branch point
};

struct History {
  Engine engine{};
  std::string_view name;         // as --engine and JSON spell it ("vllm")
  std::string_view display_name; // as sentences name it ("vLLM")
  std::string_view column;       // inspect's narrow column title ("sgl")
  // The methods whose rules are modelled for this engine (canonical names, space-separated);
  // under any other method the engine is not judged, and the report says so.
  std::string_view methods;
  // Methods the engine cannot load at all (method, why, in its own words and source): judged
  // only when the engine is asked for by name, and then the config is refused.
  std::vector<std::pair<std::string_view, std::string_view>> cannot_load;
  // The source whose rules are judged, by method ("" for the rest), for "judged as ...".
  std::string_view rules;
  std::vector<std::pair<std::string_view, std::string_view>> method_rules;
  std::string_view first;         // the oldest day modelled (support for the first architecture)
  std::string_view newest_commit; // the newest source read: what `main` judges
  std::string_view newest_date;
  // How the one version is named when it is no commit of the engine's main: transformers'
  // rules are read from files of several commits, and no one release holds them all.
  std::string_view judged_as;
  std::vector<Change> changes; // merged ones by date, then unmerged PRs
  std::vector<Release> releases;
  // Architectures (space-separated prefixes of config.json's architectures[0]) the engine
  // supports only from a later day than `first`.
  std::vector<std::pair<std::string_view, std::string_view>> support;
  // Methods whose rules qpatch models only from a later day than `first` (space-separated
  // canonical names, day): earlier versions are judged as of that day, and the report says so.
  std::vector<std::pair<std::string_view, std::string_view>> method_support;

  // The first day `method` on `architecture` is modelled: `first`, or a later support day.
  std::string_view first_for(std::string_view architecture, std::string_view method = "") const;
  // "0.20 and older", "0.21 and newer", "0.21 to 0.26": the releases cut in [from, until] (until
  // "": the newest), or "" when none was.
  std::string releases_between(std::string_view from, std::string_view until) const;

  const Change* find(std::string_view id) const;
  // True when `method` (a canonical name) is among `methods`.
  bool models(std::string_view method) const;
};

// The history of `engine` (its folder's history.cpp).
const History& history(Engine engine);

struct EngineVersion {
  Engine engine{};
  std::string from;                   // main as of this day: the changes merged by then
  std::string until;                  // the last day of the same verdicts ("" = newest read)
  std::vector<std::string_view> with; // unmerged PRs applied (SGLang "#35887")
  // True when this version stands for several eras whose rules judge the checkpoint alike
  // (engine_views merges them): reports name the span, not one era.
  bool spans_eras = false;

  // True when `id` (a PR of the engine's history) is in force in this version.
  bool has(std::string_view id) const;
  bool newest() const { return until.empty(); }
  // History::judged_as for the newest version without unmerged PRs, else "": transformers'
  // one version is no commit of its main, and is named for what it is.
  std::string_view judged_as() const;
  // "main 2026-05-07..2026-06-15", "main 2026-07-28..017e9f4 (2026-08-17)", "+#35887".
  std::string range() const;
  // How reports name it: "vLLM 2026-05-07..2026-06-15", "SGLang main with #35887".
  std::string label() const;
  bool operator==(const EngineVersion& other) const {
    return engine == other.engine && from == other.from && with == other.with;
  }
};

// What the user asked for, per engine: nothing (every version), or one version (`@REF`).
class VersionPins {
public:
  // The resolved day (YYYY-MM-DD) `engine` is pinned to, or nothing.
  const std::optional<std::string>& of(Engine engine) const;
  std::optional<std::string>& of(Engine engine);
  bool any() const;

private:
  std::map<Engine, std::optional<std::string>> m_days;
};

// The versions of `engine` to judge for `method` on `architecture`: one per era between the
// changes that concern them, oldest first (then the newest era with each unmerged PR that
// concerns them); with a pin, the one version in force that day.
std::vector<EngineVersion> versions_to_judge(Engine engine,
                                             std::string_view method,
                                             std::string_view architecture,
                                             const VersionPins& pins = {});

// The newest version of `engine` (main as read), for callers that judge one version.
EngineVersion newest_version(Engine engine);
// The one version a judge that judges one version at a time uses: the pinned one, else the
// newest version of main (no unmerged PR).
EngineVersion one_version(Engine engine,
                          std::string_view method,
                          std::string_view architecture,
                          const VersionPins& pins);

// Resolve REF for `engine`: "main" (the newest source read), "YYYY-MM-DD" (main as of that day),
// or a release ("0.27", "0.27.1": the day main was cut for it). Returns the day, or an error
// text naming what qpatch models.
struct ResolvedRef {
  std::string day;
  std::string error;
  std::string note; // an assumption to report (a day after the newest source read)
};
ResolvedRef resolve_ref(Engine engine, std::string_view ref);

// Parse an --engine value: "all", "vllm", "vllm@0.27", or a comma-separated list of these.
struct EngineChoice {
  EngineSet engines = EngineSet::all();
  VersionPins pins;
  std::vector<std::string> notes;
};
// Returns the choice, or an error text ("unknown engine 'vlm'", "vllm@2025-01-01: ...").
struct ParsedEngineChoice {
  std::optional<EngineChoice> choice;
  std::string error;
  std::string unknown; // the engine name not known, when that is the error
};
ParsedEngineChoice parse_engine_choice(std::string_view text);

// "main 2026-02-28..2026-08-17": how a header names the versions judged of one engine (one pinned
// version: its era, "main 2026-03-30..2026-05-06").
std::string range_text(const std::vector<EngineVersion>& versions);

// "vLLM main 2026-02-28..017e9f4 (2026-08-17), 3 versions": the versions judged of one engine;
// one version: its label, or the rules judged for `method` when it is the newest.
std::string versions_text(const std::vector<EngineVersion>& versions,
                          std::string_view method = "compressed-tensors");

// The smallest description of `subset` among `all` (both oldest first, one engine): "vLLM before
// 2026-05-07", "vLLM from 2026-07-28", "vLLM 2026-05-07..2026-07-27", "SGLang with #35887".
std::string subset_text(const std::vector<EngineVersion>& subset,
                        const std::vector<EngineVersion>& all);

} // namespace qpatch::engine
