/**
 * Explicit requests by what they are: the owner's body or looks asked
 * about, or abuse thrown at the assistant. The rules and the classifier
 * catch sexual vocabulary; these two kinds need no such word ("is Avery
 * good looking?", "shut up you stupid machine"). A question about the
 * owner's work ("the dashboard's look", "stupid bugs Avery fixed") is not
 * one of them.
 */

const APPEARANCE =
  /\b(?:good looking|good-looking|attractive|hot|cute|pretty|handsome|beautiful|gorgeous|ugly|physique|swimsuit|bikini|underwear|lingerie|bra size|measurements|(?:rate|rating|judge|judging) (?:\w+ ){0,2}looks|looks out of|(?:his|her|their) (?:looks|body|figure)|(?:avery|he|she|they) (?:look|looks) (?:good|hot|cute|attractive) in)\b/;

const ABUSE =
  /\b(?:shut up|stupid|idiot|idiotic|dumb|useless|moron|loser|trash|garbage|you suck|this sucks|it sucks|stfu|screw you|go to hell|hate you|piece of junk|piece of crap)\b/;

/** Work nouns that make the same words a question about the owner's work. */
const WORK =
  /\b(?:ui|ux|design|designs|dashboard|dashboards|app|apps|page|pages|site|website|product|products|code|codebase|bug|bugs|feature|features|project|projects|interface|layout|theme|component|components|api|error|errors|mistakes?|question|questions)\b/;

export function explicitAsked(words: readonly string[], ownerTokens: ReadonlySet<string>): boolean {
  const plain = words.join(" ");
  if (WORK.test(plain)) return false;
  if (ABUSE.test(plain)) return true;
  const aboutOwner =
    words.some((word) => ownerTokens.has(word)) || /\b(?:he|she|they|his|her|their)\b/.test(plain);
  return aboutOwner && APPEARANCE.test(plain);
}
