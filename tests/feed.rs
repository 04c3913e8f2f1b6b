//! The cursor feed, `GET /events`, followed exactly as chat.md's procedure says.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::chat::World;
use crate::support::ServiceClient;

/// Follows the feed from `cursor` until nothing is ready: returns the items and the cursor to
/// save (chat.md steps 2 to 4).
async fn drain(chat: &ServiceClient, token: &str, cursor: &str) -> (Vec<Value>, String) {
    let mut items = Vec::new();
    let mut at = cursor.to_owned();
    loop {
        let res = chat
            .get(&format!("/events?cursor={at}&limit=37"))
            .bearer_auth(token)
            .send()
            .await
            .expect("events");
        assert_eq!(res.status(), 200);
        let page: Value = res.json().await.expect("json");
        items.extend(page["items"].as_array().expect("items").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => at = next.to_owned(),
            None => return (items, page["latest_cursor"].as_str().expect("latest_cursor").to_owned()),
        }
    }
}

#[tokio::test]
async fn bots_following_the_feed_see_every_event_they_may_see_once_in_order() {
    let w = World::unlimited().await;
    let mut channels = Vec::new();
    for i in 0..8 {
        channels.push(w.channel(&format!("room-{i}"), false).await);
    }
    // Three bots, each in a different subset of the channels.
    let subsets: [&[usize]; 3] = [&[0, 1, 2, 3], &[2, 3, 4, 5], &[0, 4, 6, 7]];
    let mut bots = Vec::new();
    for (b, subset) in subsets.iter().enumerate() {
        let (id, token) = w.bot(&format!("Follower {b}"), &format!("follower-{b}")).await;
        for &c in *subset {
            w.add(&channels[c], &id).await;
        }
        bots.push(token);
    }

    // Step 1: the first call answers only latest_cursor.
    let mut starts = Vec::new();
    for token in &bots {
        let first = w.ok("GET", "/events", token, None).await;
        assert_eq!(first.as_object().map(|o| o.len()), Some(1), "{first}");
        starts.push(first["latest_cursor"].as_str().expect("latest_cursor").to_owned());
    }

    // Four writers, 500 posts each, across the eight channels, while the bots follow.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for wr in 0..4 {
        let chat = w.chat().clone();
        let token = w.staff.clone();
        let channels = channels.clone();
        writers.push(tokio::spawn(async move {
            let mut posted = Vec::new();
            for i in 0..500 {
                let c = (wr + i) % channels.len();
                let res = chat
                    .post(&format!("/channels/{}/messages", channels[c]))
                    .bearer_auth(&token)
                    .json(&json!({ "body": format!("w{wr} n{i}") }))
                    .send()
                    .await
                    .expect("post");
                assert_eq!(res.status(), 201);
                let m: Value = res.json().await.expect("json");
                posted.push((c, m["id"].as_str().expect("id").to_owned()));
            }
            posted
        }));
    }
    let mut followers = Vec::new();
    for (b, token) in bots.iter().enumerate() {
        let w_chat = w.chat().clone();
        let token = token.clone();
        let mut cursor = starts[b].clone();
        let done = done.clone();
        followers.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                let (items, latest) = drain(&w_chat, &token, &cursor).await;
                seen.extend(items);
                cursor = latest;
                if finished {
                    return seen;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }));
    }
    let mut posted = Vec::new();
    for wtask in writers {
        posted.extend(wtask.await.expect("writer"));
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    for (b, f) in followers.into_iter().enumerate() {
        let seen = f.await.expect("follower");
        let expected: HashSet<&String> =
            posted.iter().filter(|(c, _)| subsets[b].contains(c)).map(|(_, id)| id).collect();
        let ids: Vec<&str> = seen.iter().map(|e| e["message"]["id"].as_str().expect("message id")).collect();
        assert!(seen.iter().all(|e| e["kind"] == "message.created"), "bot {b} saw only the posts");
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "bot {b} saw an event twice");
        assert_eq!(ids.len(), expected.len(), "bot {b} saw {} of {} events", ids.len(), expected.len());
        assert!(
            ids.iter().all(|id| expected.contains(&id.to_string())),
            "bot {b} saw an event it may not see"
        );
        let numbers: Vec<i64> = seen.iter().map(|e| decode(e["cursor"].as_str().expect("cursor"))).collect();
        assert!(numbers.windows(2).all(|p| p[0] < p[1]), "bot {b} saw events out of order");
    }
    w.app.shutdown().await;
}

/// The position a cursor stands for, read the way a client never should, to check the order.
pub(crate) fn decode(cursor: &str) -> i64 {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).expect("base64");
    String::from_utf8(raw).expect("utf8").rsplit(':').next().expect("n").parse().expect("number")
}

#[tokio::test]
async fn the_feed_shows_member_and_channel_events_and_the_removal_of_the_reader() {
    let w = World::new().await;
    let start =
        w.ok("GET", "/events", &w.staff, None).await["latest_cursor"].as_str().expect("cursor").to_owned();
    let ch = w.channel("general", false).await;
    let (bot_id, bot) = w.bot("Watcher", "watcher").await;
    let bot_start =
        w.ok("GET", "/events", &bot, None).await["latest_cursor"].as_str().expect("cursor").to_owned();
    w.add(&ch, &bot_id).await;
    let m = w.post(&ch, &w.staff, "hello").await;
    let id = m["id"].as_str().expect("id");
    w.ok("PATCH", &format!("/messages/{id}"), &w.staff, Some(json!({ "body": "hello again" }))).await;
    w.ok("DELETE", &format!("/messages/{id}"), &w.staff, None).await;
    let (items, latest) = drain(w.chat(), &w.staff, &start).await;
    let kinds: Vec<&str> = items.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        vec!["channel.created", "member.added", "message.created", "message.updated", "message.deleted"]
    );
    assert_eq!(items[2]["message"]["version"], 1);
    assert_eq!(items[3]["message"]["version"], 2);
    assert_eq!(items[4]["message"]["deleted"], true);
    assert_eq!(items[1]["member"]["id"], bot_id.as_str());
    assert_eq!(
        latest,
        items[4]["cursor"].as_str().expect("cursor"),
        "latest_cursor is the position after the last item"
    );
    let (again, same) = drain(w.chat(), &w.staff, &latest).await;
    assert!(again.is_empty());
    assert_eq!(same, latest, "with nothing new, latest_cursor is the request's own cursor");

    // The bot is removed: it sees that event, and nothing of the channel after it.
    let (status, _) =
        w.call("DELETE", &format!("/channels/{ch}/members/{bot_id}"), Some(&w.staff), None).await;
    assert_eq!(status, 204);
    w.post(&ch, &w.staff, "after the bot left").await;
    let (bot_items, _) = drain(w.chat(), &bot, &bot_start).await;
    let bot_kinds: Vec<&str> = bot_items.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(
        bot_kinds,
        vec!["member.removed"],
        "a reader sees the channels it is in when it reads, and its own removal"
    );

    let (status, v) = w.call("GET", "/events?cursor=nonsense", Some(&w.staff), None).await;
    assert_eq!(status, 400, "{v}");
    w.app.shutdown().await;
}
