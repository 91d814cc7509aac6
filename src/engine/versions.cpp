// SPDX-License-Identifier: Apache-2.0
// Engine versions: which changes are in force on a day, which versions to judge, and how
// reports name them. The facts are each engine's history (src/engine/<engine>/history.cpp).
#include <qpatch/engine/versions.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

namespace qpatch::engine {

namespace {

bool is_day(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') {
    return false;
  }
  for (const size_t i : {0U, 1U, 2U, 3U, 5U, 6U, 8U, 9U}) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) {
      return false;
    }
  }
  const int month = (text[5] - '0') * 10 + (text[6] - '0');
  const int day = (text[8] - '0') * 10 + (text[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// The day before `day` (YYYY-MM-DD), for the last day of an era.
std::string day_before(std::string_view day) {
  int year = std::stoi(std::string(day.substr(0, 4)));
  int month = std::stoi(std::string(day.substr(5, 2)));
  int d = std::stoi(std::string(day.substr(8, 2)));
  if (--d == 0) {
    if (--month == 0) {
      month = 12;
      --year;
    }
    static const int k_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    d = k_days[month - 1] + (month == 2 && leap ? 1 : 0);
  }
  char buffer[11];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02d", year, month, d);
  return buffer;
}

// True when `matches` holds for one item of the space-separated `list`.
template <class Matches> bool any_item(std::string_view list, Matches&& matches) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(' ', start), list.size());
    const std::string_view item = list.substr(start, end - start);
    if (!item.empty() && matches(item)) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

using util::contains_word;

bool any_prefix(std::string_view prefixes, std::string_view architecture) {
  return any_item(prefixes, [&](std::string_view prefix) {
    return architecture.substr(0, prefix.size()) == prefix;
  });
}

} // namespace

std::vector<Change> joined_changes(std::initializer_list<std::vector<Change> (*)()> spans) {
  std::vector<Change> changes;
  for (const auto span : spans) {
    for (Change& change : span()) {
      changes.push_back(change);
    }
  }
  return changes;
}

bool Change::concerns(std::string_view method, std::string_view architecture) const {
  return (methods.empty() || contains_word(methods, method)) &&
         (architectures.empty() || any_prefix(architectures, architecture));
}

const Change* History::find(std::string_view id) const {
  for (const Change& change : changes) {
    if (change.id == id) {
      return &change;
    }
  }
  return nullptr;
}

bool History::models(std::string_view method) const {
  return contains_word(methods, method);
}

std::string_view History::first_for(std::string_view architecture, std::string_view method) const {
  std::string_view out = first;
  for (const auto& [architectures, day] : support) {
    if (any_prefix(architectures, architecture) && day > out) {
      out = day;
    }
  }
  for (const auto& [names, day] : method_support) {
    if (contains_word(names, method) && day > out) {
      out = day;
    }
  }
  return out;
}

std::string History::releases_between(std::string_view from, std::string_view until) const {
  std::vector<std::string_view> cut;
  for (const Release& release : releases) {
    if (release.date >= from && (until.empty() || release.date <= until)) {
      cut.push_back(release.name);
    }
  }
  if (cut.empty()) {
    return "";
  }
  if (from <= first) {
    return std::string(cut.back()) + " and older";
  }
  if (until.empty()) {
    return std::string(cut.front()) + " and newer";
  }
  return cut.size() == 1 ? std::string(cut.front())
                         : std::string(cut.front()) + " to " + std::string(cut.back());
}

bool EngineVersion::has(std::string_view id) const {
  if (std::find(with.begin(), with.end(), id) != with.end()) {
    return true;
  }
  const Change* change = history(engine).find(id);
  return change != nullptr && change->merged() && change->date <= from;
}

std::string_view EngineVersion::judged_as() const {
  return newest() && with.empty() ? history(engine).judged_as : std::string_view();
}

std::string EngineVersion::range() const {
  const History& h = history(engine);
  if (!judged_as().empty()) {
    return std::string(judged_as());
  }
  std::string out = "main ";
  if (newest()) {
    out +=
        from == h.newest_date || from.empty()
            ? std::string(h.newest_commit) + " (" + std::string(h.newest_date) + ")"
            : from + ".." + std::string(h.newest_commit) + " (" + std::string(h.newest_date) + ")";
  } else {
    out += from + ".." + until;
  }
  for (const std::string_view pr : with) {
    out += " with " + std::string(pr);
  }
  return out;
}

std::string EngineVersion::label() const {
  if (!judged_as().empty()) {
    return std::string(display_name(engine)) + " (" + range() + ")";
  }
  return std::string(display_name(engine)) + " " + range();
}

const std::optional<std::string>& VersionPins::of(Engine engine) const {
  static const std::optional<std::string> k_unpinned;
  const auto found = m_days.find(engine);
  return found != m_days.end() ? found->second : k_unpinned;
}

bool VersionPins::any() const {
  return std::any_of(
      m_days.begin(), m_days.end(), [](const auto& day) { return day.second.has_value(); });
}

std::optional<std::string>& VersionPins::of(Engine engine) {
  return m_days[engine];
}

std::vector<EngineVersion> versions_to_judge(Engine engine,
                                             std::string_view method,
                                             std::string_view architecture,
                                             const VersionPins& pins) {
  const History& h = history(engine);
  // Era boundaries: the days of the merged changes that concern this method and architecture,
  // after the oldest day modelled.
  // Taken in date order whatever the order the history lists them in (a row listed after a
  // later one made the newest era start at the earlier day, without the later change).
  const std::string_view first = h.first_for(architecture, method);
  std::vector<std::string> starts{std::string(first)};
  std::vector<std::string_view> unmerged;
  for (const Change& change : h.changes) {
    if (!change.concerns(method, architecture)) {
      continue;
    }
    if (!change.merged()) {
      unmerged.push_back(change.id);
    } else if (change.date > first && change.date <= h.newest_date) {
      starts.emplace_back(change.date);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<EngineVersion> eras;
  for (size_t i = 0; i < starts.size(); ++i) {
    EngineVersion version;
    version.engine = engine;
    version.from = starts[i];
    version.until = i + 1 < starts.size() ? day_before(starts[i + 1]) : std::string();
    eras.push_back(std::move(version));
  }
  if (const auto& pin = pins.of(engine)) {
    const auto in_force = std::find_if(
        eras.rbegin(), eras.rend(), [&](const EngineVersion& v) { return v.from <= *pin; });
    return {in_force != eras.rend() ? *in_force : eras.front()};
  }
  for (const std::string_view pr : unmerged) {
    EngineVersion variant = eras.back();
    variant.with.push_back(pr);
    eras.push_back(std::move(variant));
  }
  return eras;
}

EngineVersion newest_version(Engine engine) {
  const History& h = history(engine);
  EngineVersion version;
  version.engine = engine;
  version.from = std::string(h.newest_date);
  return version;
}

EngineVersion one_version(Engine engine,
                          std::string_view method,
                          std::string_view architecture,
                          const VersionPins& pins) {
  std::vector<EngineVersion> versions = versions_to_judge(engine, method, architecture, pins);
  while (versions.size() > 1 && !versions.back().with.empty()) {
    versions.pop_back();
  }
  return versions.back();
}

ResolvedRef resolve_ref(Engine engine, std::string_view ref) {
  const History& h = history(engine);
  const std::string name(to_string(engine));
  const std::string modelled =
      "qpatch models " + std::string(display_name(engine)) + " main from " + std::string(h.first) +
      " to " + std::string(h.newest_date) + " (" + std::string(h.newest_commit) + ")";
  ResolvedRef out;
  if (ref == "main") {
    out.day = std::string(h.newest_date);
    return out;
  }
  if (is_day(ref)) {
    if (ref < h.first) {
      out.error = name + "@" + std::string(ref) + ": " + modelled;
      return out;
    }
    out.day = std::string(ref);
    if (ref > h.newest_date) {
      out.note = name + "@" + std::string(ref) + " is judged as " + name + " main of " +
                 std::string(h.newest_date) + " (" + std::string(h.newest_commit) +
                 "), the newest source read: changes merged since then are not modelled";
    }
    return out;
  }
  // A release: "0.27" or "0.27.1" (a patch release ships its minor release's rows).
  std::string_view minor = ref;
  if (const size_t first_dot = ref.find('.'); first_dot != std::string_view::npos) {
    if (const size_t second = ref.find('.', first_dot + 1); second != std::string_view::npos) {
      minor = ref.substr(0, second);
    }
  }
  if (!minor.empty() && minor.front() == 'v') {
    minor.remove_prefix(1);
  }
  for (const Release& release : h.releases) {
    if (release.name == minor) {
      out.day = std::string(release.date);
      if (out.day < h.first) {
        out.error = name + "@" + std::string(ref) + ": " + std::string(release.name) +
                    " was cut on " + std::string(release.date) + ", before " +
                    std::string(h.first) + "; " + modelled;
        out.day.clear();
      } else if (out.day > h.newest_date) {
        out.note = name + "@" + std::string(ref) + " (cut " + std::string(release.date) +
                   ") is judged as " + name + " main of " + std::string(h.newest_date) + " (" +
                   std::string(h.newest_commit) +
                   "), the newest source read: changes merged since then are not modelled";
      }
      return out;
    }
  }
  std::string known;
  for (const Release& release : h.releases) {
    known += (known.empty() ? "" : ", ") + std::string(release.name);
  }
  out.error = name + "@" + std::string(ref) + ": not a release qpatch knows (" +
              (known.empty() ? std::string("none") : known) +
              "); give main, a day YYYY-MM-DD, or one of those";
  return out;
}

ParsedEngineChoice parse_engine_choice(std::string_view text) {
  ParsedEngineChoice out;
  if (text == "all") {
    out.choice = EngineChoice{};
    return out;
  }
  EngineChoice choice;
  choice.engines = EngineSet::none();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, end - start);
    const size_t at = item.find('@');
    const std::string_view name = item.substr(0, at);
    const auto engine = EngineSet::parse(name);
    if (!engine || name == "all") {
      out.unknown = std::string(name);
      out.error = "unknown engine '" + out.unknown + "'";
      return out;
    }
    const Engine which = engine->list().front();
    choice.engines.add(which);
    if (at != std::string_view::npos) {
      const ResolvedRef ref = resolve_ref(which, item.substr(at + 1));
      if (!ref.error.empty()) {
        out.error = ref.error;
        return out;
      }
      choice.pins.of(which) = ref.day;
      if (!ref.note.empty()) {
        choice.notes.push_back(ref.note);
      }
    }
    start = end + 1;
  }
  out.choice = std::move(choice);
  return out;
}

std::string versions_text(const std::vector<EngineVersion>& versions, std::string_view method) {
  if (versions.empty()) {
    return "";
  }
  const Engine engine = versions.front().engine;
  if (versions.size() == 1) {
    const EngineVersion& only = versions.front();
    // The newest version alone is named by the rules judged (a plugin the method needs too).
    return only.newest() && !only.spans_eras && only.with.empty()
               ? std::string(rules_of(engine, method))
               : only.label();
  }
  const History& h = history(engine);
  return std::string(display_name(engine)) + " main " + versions.front().from + ".." +
         std::string(h.newest_commit) + " (" + std::string(h.newest_date) + "), " +
         std::to_string(versions.size()) + " versions";
}

std::string range_text(const std::vector<EngineVersion>& versions) {
  if (versions.empty()) {
    return "";
  }
  if (versions.size() == 1 && !versions.front().spans_eras) {
    return versions.front().range(); // "main 2026-03-30..2026-05-06", one version pinned
  }
  // The span only: how many versions it holds depends on the config (equal rules merge), and
  // JSON's engine_versions lists them.
  return "main " + versions.front().from + ".." +
         std::string(history(versions.front().engine).newest_date);
}

std::string subset_text(const std::vector<EngineVersion>& subset,
                        const std::vector<EngineVersion>& all) {
  if (all.empty() || subset.empty()) {
    return "";
  }
  const std::string who(display_name(all.front().engine));
  if (subset.size() == all.size()) {
    return who;
  }
  const auto in_subset = [&](const EngineVersion& v) {
    return std::find(subset.begin(), subset.end(), v) != subset.end();
  };
  size_t bases = 0; // eras of main; unmerged variants follow them in `all`
  while (bases < all.size() && all[bases].with.empty()) {
    ++bases;
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < bases;) {
    if (!in_subset(all[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < bases && in_subset(all[j + 1])) {
      ++j;
    }
    const History& h = history(all.front().engine);
    const auto with_releases = [&](std::string text, std::string_view from, std::string_view to) {
      const std::string releases = h.releases_between(from, to);
      return releases.empty() ? text : text + " (" + releases + ")";
    };
    // The newest era stands for its unmerged variants too, unless some are not in `subset`.
    std::string without;
    for (size_t v = bases; j + 1 == bases && v < all.size(); ++v) {
      if (!in_subset(all[v])) {
        without += (without.empty() ? "without " : " and ") + std::string(all[v].with.front());
      }
    }
    if (i == 0 && j + 1 == bases) {
      parts.push_back(without);
    } else if (i == 0) {
      parts.push_back(with_releases("before " + all[j + 1].from, h.first, all[j].until));
    } else if (j + 1 == bases) {
      parts.push_back(with_releases("from " + all[i].from, all[i].from, "") +
                      (without.empty() ? "" : " " + without));
    } else {
      parts.push_back(with_releases(all[i].from + ".." + all[j].until, all[i].from, all[j].until));
    }
    i = j + 1;
  }
  const bool newest_in = bases > 0 && in_subset(all[bases - 1]);
  for (size_t i = bases; i < all.size() && !newest_in; ++i) {
    if (in_subset(all[i])) {
      std::string with;
      for (const std::string_view pr : all[i].with) {
        with += (with.empty() ? "" : " and ") + std::string(pr);
      }
      parts.push_back("with " + with);
    }
  }
  std::string out = who;
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? " " : ", ") + parts[i];
  }
  return out;
}

} // namespace qpatch::engine
