// Package adversary holds the adversarial-peer suite (its tests): one
// site of a pair runs a real kord party and module, the other runs the
// same real code behind a scripted adversary that can drop, replay,
// reorder, delay and rewrite every peer message, and an oracle checks
// after every step that the honest site never delivers an output
// generated for another request or twice, that every delivered pair
// evaluates to this request's function, that α is called reusable only
// when no module opened a frame of the request, and that every request
// ends in time. See docs/threat-model.md ("The adversarial-peer suite").
package adversary
