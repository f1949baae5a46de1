"""Irregular English word forms that stemming cannot join: "go" / "went", "buy" / "bought".

The porter stemmer only strips suffixes, so a question asking where someone "went" never meets
a note saying they "go", and "choose" never meets "chose". This module holds a small,
hand-written table of common irregular verbs (base, past, past participle) and irregular plural
nouns; a query word that is one of these forms also searches for the other forms of its group.

Invariants: the table is general English only (nothing taken from any benchmark's questions),
modest (about a hundred groups), and leaves out forms that are far more often a different word
("rose", "lay", "bit", "ground"...) and the function words the query drops anyway.
Lookups are on lowercase words.
"""

from __future__ import annotations

__all__ = ["forms_of"]

#: One group per line: every word on a line stands for the others.
_GROUPS = """
    arise arose arisen
    awake awoke awoken
    beat beaten
    become became
    begin began begun
    bend bent
    bleed bled
    blow blew blown
    break broke broken
    breed bred
    bring brought
    build built
    burn burnt
    buy bought
    catch caught
    choose chose chosen
    come came
    creep crept
    deal dealt
    dig dug
    draw drew drawn
    dream dreamt
    drink drank drunk
    drive drove driven
    eat ate eaten
    fall fell fallen
    feed fed
    feel felt
    fight fought
    find found
    flee fled
    fly flew flown
    forbid forbade forbidden
    forget forgot forgotten
    forgive forgave forgiven
    freeze froze frozen
    get got gotten
    give gave given
    go went gone
    grow grew grown
    hang hung
    hear heard
    hide hid hidden
    hold held
    keep kept
    kneel knelt
    know knew known
    lead led
    leave left
    lend lent
    lose lost
    make made
    mean meant
    meet met
    pay paid
    ride rode ridden
    ring rang rung
    run ran
    say said
    see saw seen
    seek sought
    sell sold
    send sent
    shake shook shaken
    shine shone
    shoot shot
    shrink shrank shrunk
    sing sang sung
    sink sank sunk
    sit sat
    sleep slept
    slide slid
    speak spoke spoken
    spend spent
    spin spun
    stand stood
    steal stole stolen
    stick stuck
    sting stung
    strike struck
    swear swore sworn
    sweep swept
    swim swam swum
    swing swung
    take took taken
    teach taught
    tear tore torn
    tell told
    think thought
    throw threw thrown
    understand understood
    wake woke woken
    wear wore worn
    weep wept
    win won
    write wrote written
    child children
    foot feet
    goose geese
    man men
    mouse mice
    person people
    tooth teeth
    woman women
"""

_FORMS: dict[str, tuple[str, ...]] = {}
for _line in _GROUPS.strip().splitlines():
    _words = tuple(_line.split())
    if len(_words) > 1:
        for _word in _words:
            _FORMS[_word] = _words


def forms_of(word: str) -> tuple[str, ...]:
    """The other forms of ``word`` (lowercase) in its irregular group; empty when it has none."""
    group = _FORMS.get(word)
    if group is None:
        return ()
    return tuple(w for w in group if w != word)
